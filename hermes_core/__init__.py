"""Hermes kernel: hookspecs, plugin loader, agent loop, sessions and the shared JSON-RPC peer.

``import hermes_core`` is cheap: public names are loaded on first attribute access, so neither
pydantic nor any plugin is imported until something needs it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
# The name pip knows this project by; upstream Hermes is another project, published as hermes-agent.
__distribution__ = "hermes-kernel"

_EXPORTS: dict[str, str] = {
    # errors
    "HermesError": "hermes_core.errors",
    "SessionNotFound": "hermes_core.errors",
    "SessionBusy": "hermes_core.errors",
    "SessionInUse": "hermes_core.errors",
    "InvalidValue": "hermes_core.errors",
    "ModelNotFound": "hermes_core.errors",
    "ModelAmbiguous": "hermes_core.errors",
    "ModelNeedsKey": "hermes_core.errors",
    "RewindError": "hermes_core.errors",
    "CommandUsageError": "hermes_core.errors",
    "CommandNotAvailable": "hermes_core.errors",
    "StorageError": "hermes_core.errors",
    "BudgetExceeded": "hermes_core.errors",
    "BudgetUnavailable": "hermes_core.errors",
    "ChargeTo": "hermes_core.budgets",
    "Admission": "hermes_core.budgets",
    "Budgets": "hermes_core.budgets",
    "LedgerSpec": "hermes_core.records",
    "BucketLimits": "hermes_core.budget_ledger",
    "LedgerCall": "hermes_core.budget_ledger",
    "Verdict": "hermes_core.budget_ledger",
    "BudgetLedger": "hermes_core.budget_ledger",
    "StorageUnavailable": "hermes_core.errors",
    "StorageUnsupported": "hermes_core.errors",
    "CursorError": "hermes_core.errors",
    "LeaseLost": "hermes_core.errors",
    "EventLogStopped": "hermes_core.errors",
    "ConfigError": "hermes_core.errors",
    "PluginError": "hermes_core.errors",
    "ProviderError": "hermes_core.errors",
    # content
    "TextPart": "hermes_core.content",
    "ImagePart": "hermes_core.content",
    "Part": "hermes_core.content",
    "SeedMessage": "hermes_core.content",
    "parts_text": "hermes_core.content",
    "comparable_messages": "hermes_core.session.compare",
    # events
    "ALL_KINDS": "hermes_core.events",
    "Usage": "hermes_core.events",
    "TurnOutcome": "hermes_core.events",
    "FileChange": "hermes_core.events",
    "TodoItem": "hermes_core.events",
    "Event": "hermes_core.events",
    "AnyEvent": "hermes_core.events",
    "EVENT_TYPES": "hermes_core.events",
    "TurnStarted": "hermes_core.events",
    "SegmentStarted": "hermes_core.events",
    "TextDelta": "hermes_core.events",
    "ReasoningDelta": "hermes_core.events",
    "Retrying": "hermes_core.events",
    "ToolAnnounced": "hermes_core.events",
    "ToolDecision": "hermes_core.events",
    "QuestionRequested": "hermes_core.events",
    "QuestionClosed": "hermes_core.events",
    "ToolExecuting": "hermes_core.events",
    "ToolProgress": "hermes_core.events",
    "ToolCompleted": "hermes_core.events",
    "SteerDelivered": "hermes_core.events",
    "UsageUpdated": "hermes_core.events",
    "TitleChanged": "hermes_core.events",
    "SessionChanged": "hermes_core.events",
    "TurnCompleted": "hermes_core.events",
    "BackgroundCompleted": "hermes_core.events",
    "SessionProblem": "hermes_core.events",
    "SubagentEvent": "hermes_core.events",
    "SubagentKind": "hermes_core.events",
    "SubagentStatus": "hermes_core.events",
    # delegated children
    "DelegationLimits": "hermes_core.subagents",
    "Lineage": "hermes_core.subagent",
    "Subagent": "hermes_core.subagent",
    "Subagents": "hermes_core.subagents",
    "subagent_payload": "hermes_core.subagent",
    # providers
    "ModelInfo": "hermes_core.providers",
    "ToolCallRequest": "hermes_core.providers",
    "ToolSchema": "hermes_core.providers",
    "ChatMessage": "hermes_core.providers",
    "ChatRequest": "hermes_core.providers",
    "TextChunk": "hermes_core.providers",
    "ReasoningChunk": "hermes_core.providers",
    "ToolCallChunk": "hermes_core.providers",
    "UsageChunk": "hermes_core.providers",
    "FinishChunk": "hermes_core.providers",
    "FinishReason": "hermes_core.providers",
    "Chunk": "hermes_core.providers",
    "Provider": "hermes_core.providers",
    "ProviderPreset": "hermes_core.providers",
    "ProviderBase": "hermes_core.provider_base",
    "model_vision": "hermes_core.vision",
    "TITLE_INSTRUCTION": "hermes_core.meta_prompts",
    "SUMMARY_INSTRUCTION": "hermes_core.meta_prompts",
    # storage
    "cut_off_reason": "hermes_core.history",
    "cut_off_note": "hermes_core.history",
    "CUT_OFF_NOTES": "hermes_core.history",
    "NO_REPLY_NOTES": "hermes_core.history",
    "no_reply_note": "hermes_core.history",
    "StoredToolCall": "hermes_core.storage",
    "NewRow": "hermes_core.storage",
    "RecordClaim": "hermes_core.storage",
    "Row": "hermes_core.storage",
    "SessionRecord": "hermes_core.storage",
    "SessionPage": "hermes_core.storage",
    "Storage": "hermes_core.storage",
    "MemoryStorage": "hermes_core.memory_storage",
    "storage_kit": "hermes_core.storage_kit",
    # durable records (kernel.records) and the event log (kernel.events)
    "StoredRecord": "hermes_core.record_store",
    "Expect": "hermes_core.record_store",
    "Claim": "hermes_core.record_store",
    "RecordPage": "hermes_core.record_store",
    "RecordStore": "hermes_core.record_store",
    "RecordUpdates": "hermes_core.record_store",
    "RecordInserts": "hermes_core.record_store",
    "RecordChange": "hermes_core.record_store",
    "Records": "hermes_core.record_space",
    "RecordSpace": "hermes_core.record_space",
    "KEEP": "hermes_core.record_space",
    # scoped access keys and the scope table
    "AccessKeys": "hermes_core.access_keys",
    "KeyInfo": "hermes_core.access_keys",
    "Principal": "hermes_core.access_keys",
    "legacy_principal": "hermes_core.access_keys",
    "parse_duration": "hermes_core.access_keys",
    "check_tenant": "hermes_core.access_keys",
    "parse_scopes": "hermes_core.access_keys",
    "split_secret": "hermes_core.access_keys",
    "ACCESS_SCOPES": "hermes_core.access_keys",
    "DEFAULT_TENANT": "hermes_core.access_keys",
    "access_scopes": "hermes_core.access_scopes",
    "SessionTenants": "hermes_core.session_tenants",
    "EventChunk": "hermes_core.event_log.store",
    "ChunkInfo": "hermes_core.event_log.store",
    "ChunkWrite": "hermes_core.event_log.store",
    "EventLogStore": "hermes_core.event_log.store",
    "EventLogs": "hermes_core.event_log.owner",
    "LogGap": "hermes_core.event_log.reader",
    "LogPage": "hermes_core.event_log.reader",
    "parse_cursor": "hermes_core.event_log.reader",
    # tools
    "ToolError": "hermes_core.tools",
    "ToolResult": "hermes_core.tools",
    "ToolSpec": "hermes_core.tools",
    "ToolContext": "hermes_core.tools",
    "FileAccess": "hermes_core.tools",
    # records
    "OptionSpec": "hermes_core.records",
    "TransportSpec": "hermes_core.records",
    "TransportContext": "hermes_core.records",
    "ProviderSpec": "hermes_core.records",
    "ModelPrice": "hermes_core.records",
    "PriceSource": "hermes_core.records",
    "PriceLookup": "hermes_core.records",
    "ProviderFactory": "hermes_core.records",
    "StorageFactory": "hermes_core.records",
    "ServerStorageFactory": "hermes_core.records",
    "CommandSpec": "hermes_core.records",
    "CommandContext": "hermes_core.records",
    "CommandResult": "hermes_core.records",
    "StorageSpec": "hermes_core.records",
    "RunBusSpec": "hermes_core.records",
    "ConfigSection": "hermes_core.records",
    # the run bus contract (hermes api runs between instances)
    "RunBus": "hermes_core.run_bus",
    "RunBusFactory": "hermes_core.run_bus",
    "BusEvent": "hermes_core.run_bus",
    "BusRun": "hermes_core.run_bus",
    "OwnerGone": "hermes_core.run_bus",
    "ControlHandler": "hermes_core.run_bus",
    "RunOwner": "hermes_core.run_bus",
    "RunStatus": "hermes_core.run_bus",
    "RunEnd": "hermes_core.run_bus",
    "JsonObject": "hermes_core.run_bus",
    "SchemaSpec": "hermes_core.records",
    # tracing (docs/observability.md)
    "TracerSpec": "hermes_core.tracing",
    "Tracer": "hermes_core.tracing",
    "Span": "hermes_core.tracing",
    "valid_traceparent": "hermes_core.tracing",
    "traceparent_from_meta": "hermes_core.tracing",
    # the wire schemas' version (hermes schema export)
    "SCHEMA_VERSION": "hermes_core.wire_stamp",
    "SCHEMA_SHA256": "hermes_core.wire_stamp",
    "schema_stamp": "hermes_core.wire_stamp",
    "wire_schemas": "hermes_core.wire_schema",
    "JSON_SCHEMA_DIALECT": "hermes_core.wire_schema",
    "PolicyDecision": "hermes_core.records",
    "ToolCallInfo": "hermes_core.records",
    # hooks
    "hookimpl": "hermes_core.hookspecs",
    "hookspec": "hermes_core.hookspecs",
    "watches": "hermes_core.observers",
    # settings
    "SettingsStore": "hermes_core.settings_store",
    "CoreSettings": "hermes_core.settings",
    # approvals
    "approvals": "hermes_core.approvals",
    "provider_kit": "hermes_core.provider_kit",
    # kernel and sessions
    "Kernel": "hermes_core.kernel",
    "Sessions": "hermes_core.session.table",
    "Models": "hermes_core.model_choice",
    "ProviderDirectory": "hermes_core.provider_directory",
    "QuestionBroker": "hermes_core.questions",
    "Registry": "hermes_core.registry",
    "ToolSource": "hermes_core.tool_sources",
    "ToolSources": "hermes_core.tool_sources",
    "ToolServerStatus": "hermes_core.tool_sources",
    "Session": "hermes_core.session.live",
    "SessionInfo": "hermes_core.session.types",
    "Turn": "hermes_core.session.queue",
    "rpc": "hermes_core.rpc",
    "redact": "hermes_core.redaction",
    "RedactingLogFilter": "hermes_core.redaction",
    "redact_log_handlers": "hermes_core.redaction",
    "testing": "hermes_core.testing",
    "scenarios": "hermes_core.scenarios",
    # shared helpers for transports
    "mint_session_id": "hermes_core.ids",
    "ModelRef": "hermes_core.refs",
    "ResolvedModel": "hermes_core.models",
    "load_ref": "hermes_core.refs",
    "check_workspace": "hermes_core.workspace",
    "expand_home": "hermes_core.workspace",
    "resolve_in_workspace": "hermes_core.workspace",
    "WorkspaceError": "hermes_core.workspace",
    "WorkspaceProblem": "hermes_core.workspace",
    "IMAGE_MIME": "hermes_core.media_types",
    "image_mime": "hermes_core.media_types",
    # the transport toolkit
    "transport_kit": "hermes_core.transport_kit",
    "ErrorRule": "hermes_core.transport_kit.errors",
    "ErrorTable": "hermes_core.transport_kit.errors",
    "internal_error": "hermes_core.transport_kit.errors",
    "MethodBinder": "hermes_core.transport_kit.binder",
    "jsonrpc_adapters": "hermes_core.transport_kit.binder",
    "DeltaCoalescer": "hermes_core.transport_kit.coalesce",
    "run_prompt": "hermes_core.transport_kit.prompt",
    "event_payload": "hermes_core.transport_kit.prompt",
    "Answerer": "hermes_core.transport_kit.prompt",
    "exec_at_exit": "hermes_core.transport_kit.restart",
}

__all__ = ["__distribution__", "__version__", *sorted(_EXPORTS)]


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'hermes_core' has no attribute {name!r}")
    module = importlib.import_module(module_name)
    value = module if module_name.rsplit(".", 1)[-1] == name else getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    from hermes_core import (  # noqa: F401
        access_scopes,
        approvals,
        provider_kit,
        rpc,
        scenarios,
        storage_kit,
        testing,
        transport_kit,
    )
    from hermes_core.access_keys import (  # noqa: F401
        ACCESS_SCOPES,
        DEFAULT_TENANT,
        AccessKeys,
        KeyInfo,
        Principal,
        check_tenant,
        legacy_principal,
        parse_duration,
        parse_scopes,
        split_secret,
    )
    from hermes_core.content import *  # noqa: F403
    from hermes_core.errors import *  # noqa: F403
    from hermes_core.event_log.owner import EventLogs  # noqa: F401
    from hermes_core.event_log.reader import LogGap, LogPage, parse_cursor  # noqa: F401
    from hermes_core.event_log.store import ChunkInfo, ChunkWrite, EventChunk, EventLogStore  # noqa: F401
    from hermes_core.events import *  # noqa: F403
    from hermes_core.history import (  # noqa: F401
        CUT_OFF_NOTES,
        NO_REPLY_NOTES,
        cut_off_note,
        cut_off_reason,
        no_reply_note,
    )
    from hermes_core.hookspecs import hookimpl, hookspec  # noqa: F401
    from hermes_core.ids import mint_session_id  # noqa: F401
    from hermes_core.kernel import Kernel  # noqa: F401
    from hermes_core.media_types import IMAGE_MIME, image_mime  # noqa: F401
    from hermes_core.memory_storage import MemoryStorage  # noqa: F401
    from hermes_core.meta_prompts import SUMMARY_INSTRUCTION, TITLE_INSTRUCTION  # noqa: F401
    from hermes_core.model_choice import Models  # noqa: F401
    from hermes_core.models import ResolvedModel  # noqa: F401
    from hermes_core.observers import watches  # noqa: F401
    from hermes_core.provider_base import ProviderBase  # noqa: F401
    from hermes_core.provider_directory import ProviderDirectory  # noqa: F401
    from hermes_core.providers import *  # noqa: F403
    from hermes_core.questions import QuestionBroker  # noqa: F401
    from hermes_core.record_space import KEEP, Records, RecordSpace  # noqa: F401
    from hermes_core.record_store import (  # noqa: F401
        Claim,
        Expect,
        RecordChange,
        RecordInserts,
        RecordPage,
        RecordStore,
        RecordUpdates,
        StoredRecord,
    )
    from hermes_core.records import *  # noqa: F403
    from hermes_core.redaction import RedactingLogFilter, redact, redact_log_handlers  # noqa: F401
    from hermes_core.refs import ModelRef, load_ref  # noqa: F401
    from hermes_core.registry import Registry  # noqa: F401
    from hermes_core.run_bus import (  # noqa: F401
        BusEvent,
        BusRun,
        ControlHandler,
        JsonObject,
        OwnerGone,
        RunBus,
        RunBusFactory,
        RunEnd,
        RunOwner,
        RunStatus,
    )
    from hermes_core.session.compare import comparable_messages  # noqa: F401
    from hermes_core.session.live import Session  # noqa: F401
    from hermes_core.session.queue import Turn  # noqa: F401
    from hermes_core.session.table import Sessions  # noqa: F401
    from hermes_core.session.types import SessionInfo  # noqa: F401
    from hermes_core.session_tenants import SessionTenants  # noqa: F401
    from hermes_core.settings import CoreSettings  # noqa: F401
    from hermes_core.settings_store import SettingsStore  # noqa: F401
    from hermes_core.storage import *  # noqa: F403
    from hermes_core.subagent import Lineage, Subagent, subagent_payload  # noqa: F401
    from hermes_core.subagents import DelegationLimits, Subagents  # noqa: F401
    from hermes_core.tool_sources import ToolServerStatus, ToolSource, ToolSources  # noqa: F401
    from hermes_core.tools import *  # noqa: F403
    from hermes_core.tracing import Span, Tracer, TracerSpec, traceparent_from_meta, valid_traceparent  # noqa: F401
    from hermes_core.transport_kit import *  # noqa: F403
    from hermes_core.vision import model_vision  # noqa: F401
    from hermes_core.wire_schema import JSON_SCHEMA_DIALECT, wire_schemas  # noqa: F401
    from hermes_core.wire_stamp import SCHEMA_SHA256, SCHEMA_VERSION, schema_stamp  # noqa: F401
    from hermes_core.workspace import (  # noqa: F401
        WorkspaceError,
        WorkspaceProblem,
        check_workspace,
        expand_home,
        resolve_in_workspace,
    )
