"""Typed failures of the core API; every transport maps these to its own wire codes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal


class HermesError(Exception):
    """Base class of every error the core raises on purpose."""


class SessionNotFound(HermesError):
    """No live or stored session has this id (or title)."""

    def __init__(self, session_id: str) -> None:
        super().__init__(f"session not found: {session_id}")
        self.session_id = session_id


class SessionBusy(HermesError):
    """The session cannot take this request now.

    ``reason`` is one of ``busy`` (a turn runs), ``queue_full``, ``background_limit``, ``subagent``
    (the session is a delegated child still running).
    """

    def __init__(self, reason: str, message: str | None = None) -> None:
        super().__init__(message or f"session busy: {reason}")
        self.reason = reason


class SessionInUse(HermesError):
    """Another Hermes process holds the session's writer lease."""

    def __init__(self, owner: str) -> None:
        super().__init__("session is open in another Hermes process")
        self.owner = owner


class InvalidValue(HermesError):
    """A value given to the core is not acceptable; ``allowed`` describes what is."""

    def __init__(self, field: str, allowed: str | Sequence[str] | None = None, message: str | None = None):
        if message is None:
            if allowed is None:
                message = f"invalid value for {field}"
            elif isinstance(allowed, str):
                message = f"invalid value for {field}: expected {allowed}"
            else:
                message = f"invalid value for {field}: expected one of {', '.join(allowed)}"
        super().__init__(message)
        self.field = field
        self.allowed = allowed


class ModelNotFound(HermesError):
    """A model reference matches nothing; ``candidates`` are near matches to suggest."""

    def __init__(self, ref: str, candidates: Sequence[str] = (), message: str | None = None) -> None:
        hint = f" (did you mean: {', '.join(candidates)})" if candidates else ""
        super().__init__(message or f"unknown model: {ref}{hint}")
        self.ref = ref
        self.candidates = list(candidates)


class ModelNeedsKey(ModelNotFound):
    """The model is offered only by providers that have no API key; nothing was switched.

    ``candidates`` are the ``provider:model`` references it would be; ``keys`` maps each of those
    providers to the variable that holds its key (None when the provider names none).
    """

    def __init__(
        self,
        ref: str,
        candidates: Sequence[str],
        keys: Mapping[str, str | None],
        message: str | None = None,
    ) -> None:
        if message is None:
            offers = ", ".join(
                f"{c} (set {keys.get(c.split(':', 1)[0]) or 'its api_key'})" for c in candidates
            )
            message = (
                f"model {ref!r} is offered only by providers without an API key: {offers}; "
                "set the key in the environment, .env or providers.NAME.api_key in config.toml"
            )
        super().__init__(ref, (), message)
        self.candidates = list(candidates)
        self.keys = dict(keys)


class ModelAmbiguous(HermesError):
    """A bare model name matches several providers; the caller must pick one."""

    def __init__(self, ref: str, candidates: Sequence[str]) -> None:
        super().__init__(f"model {ref!r} is ambiguous; use one of: {', '.join(candidates)}")
        self.ref = ref
        self.candidates = list(candidates)


class RewindError(HermesError):
    """A rewind was refused; ``code`` is the TUI-gateway code every transport maps from."""

    def __init__(self, code: int, message: str, data: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.data = dict(data or {})


class CommandUsageError(HermesError):
    """A slash command got arguments it cannot use; ``usage`` is its usage line.

    ``str(error)`` is what every surface shows: the message followed by the usage line (the
    message alone when it already quotes the usage line, the usage line alone without a message).
    ``reason`` keeps the message as given.
    """

    def __init__(self, usage: str, message: str | None = None) -> None:
        if not message:
            shown = f"usage: {usage}"
        elif usage and usage not in message:
            shown = f"{message.rstrip('. ')}; usage: {usage}"
        else:
            shown = message
        super().__init__(shown)
        self.usage = usage
        self.reason = message


class CommandNotAvailable(HermesError):
    """The command exists but this surface cannot honour it."""

    def __init__(self, name: str, surface: str, message: str | None = None) -> None:
        super().__init__(message or f"/{name} is not available here ({surface})")
        self.name = name
        self.surface = surface


class StorageError(HermesError):
    """The storage backend failed; nothing half-done was written."""


class StorageUnavailable(StorageError):
    """The storage server cannot be reached or has no free connection now; try again later.

    Nothing was written. Transports answer it as "service unavailable" (HTTP 503), never by
    waiting without bound.
    """


class StorageUnsupported(StorageError):
    """The storage backend does not implement a part of the protocol a call needs (records, the
    event log); the message names the backend and what it lacks. Nothing was written."""


class CursorError(InvalidValue):
    """An event-log cursor that is not a number, is negative, or lies ahead of the log.

    :ivar problem: ``not_a_number``, ``negative`` or ``ahead``.
    :ivar head: the newest seq of the log (for ``ahead``), else None.
    """

    def __init__(self, problem: str, message: str, head: int | None = None) -> None:
        super().__init__("cursor", message=message)
        self.problem = problem
        self.head = head


class EventLogStopped(StorageError):
    """A session's event log stopped before it stored the event waited for, and this process
    will not store it: its close timed out or failed while writes were still due, storage
    refused its writes for too long, or another process wrote the log.

    The events after ``stored`` were never shown and must not be: their numbers may name other
    events once the session is opened again. A transport ends its stream (or sends them without
    a number) instead of waiting.

    :ivar session_id: the session.
    :ivar seq: the number waited for.
    :ivar stored: the newest number this process stored in the log.
    """

    def __init__(self, session_id: str, seq: int, stored: int) -> None:
        super().__init__(
            f"the event log of session {session_id} stopped at event {stored}; "
            f"event {seq} and those after it were not stored"
        )
        self.session_id = session_id
        self.seq = seq
        self.stored = stored


class LeaseLost(StorageError):
    """A write was refused: another process took this session's writer lease over (fencing).

    Nothing was written; the session must be opened again to write.
    """

    def __init__(self, session_id: str, holder: str | None) -> None:
        super().__init__(
            f"session {session_id} is now written by another Hermes instance; nothing was written"
        )
        self.session_id = session_id
        self.holder = holder


class ConfigError(HermesError):
    """Settings are malformed or name something that does not exist."""


class PluginError(HermesError):
    """A plugin failed to load or register (raised in strict mode)."""


ProviderErrorKind = Literal["auth", "rate_limit", "upstream", "network"]


class ProviderError(HermesError):
    """A model provider failed in a known way.

    :param kind: ``auth``, ``rate_limit``, ``upstream`` or ``network``.
    :param retryable: whether the core may retry (only ``rate_limit``/``upstream`` are retried).
    :param retry_after: seconds the upstream asked us to wait, if it said.
    """

    def __init__(
        self,
        kind: ProviderErrorKind,
        message: str,
        *,
        retryable: bool = False,
        retry_after: float | None = None,
        status: int | None = None,
    ) -> None:
        super().__init__(message)
        self.kind: ProviderErrorKind = kind
        self.message = message
        self.retryable = retryable
        self.retry_after = retry_after
        self.status = status


class BudgetExceeded(HermesError):
    """A budget bucket refused a request or a model call (docs/reference/budgets.md).

    :ivar bucket: the bucket that refused (``key:…``, ``tenant:…``, ``session:…``).
    :ivar limit: which of its limits (``spend_usd``, ``tokens_per_minute``,
        ``requests_per_minute``, ``concurrent_runs``) or ``unavailable`` (the ledger cannot be
        reached: budgets fail closed).
    :ivar retry_after: seconds until trying again may succeed.
    """

    def __init__(self, message: str, *, bucket: str | None, limit: str, retry_after: float) -> None:
        super().__init__(message)
        self.bucket = bucket
        self.limit = limit
        self.retry_after = retry_after


class BudgetUnavailable(HermesError):
    """The budget ledger (Redis, or the shared records) cannot be reached; budgets fail closed."""
