"""Helpers for HTTP model providers, shared because a plugin may not import another plugin.

Use as ``from hermes_core import provider_kit`` and then ``provider_kit.iter_events(…)``:

- streams (:mod:`.sse`): SSE line/event parsing over any object with ``async readany() -> bytes``,
  a stall timeout on every read, :class:`StreamStalled`, :class:`StreamBroken`,
  :class:`UpstreamError`;
- messages (:mod:`.messages`): Retry-After parsing, error-body detail, URL display and secrets,
  a :class:`Redactor` for provider messages;
- classification (:mod:`.classify`): HTTP status and in-stream errors → ``ProviderError``, with
  hooks for what each vendor says differently;
- plumbing (:mod:`.http`): :class:`HttpClient`, a loop-bound session with timeouts and error
  translation, given the ``aiohttp`` module by the plugin so the kernel never imports it;
- settings (:mod:`.settings`): the pydantic bases :class:`HttpSettings` and :class:`ModelEntry`
  and :func:`coerce_settings`, loaded on first use so importing this package loads no pydantic.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from hermes_core.provider_kit.classify import ErrorFactory, StreamFault, StreamFaultReader
from hermes_core.provider_kit.http import HttpClient
from hermes_core.provider_kit.messages import (
    Redactor,
    detail_from_payload,
    display_url,
    error_detail,
    parse_retry_after,
    url_secrets,
)
from hermes_core.provider_kit.shapes import typed_field
from hermes_core.provider_kit.sse import (
    ByteStream,
    SseEvent,
    StreamBroken,
    StreamStalled,
    UpstreamError,
    decode_event,
    iter_events,
    iter_lines,
    read_body,
    read_some,
)

if TYPE_CHECKING:
    from hermes_core.provider_kit.settings import HttpSettings, ModelEntry, coerce_settings

_PYDANTIC_NAMES = frozenset({"HttpSettings", "ModelEntry", "coerce_settings"})

__all__ = [
    "ByteStream",
    "ErrorFactory",
    "HttpClient",
    "HttpSettings",
    "ModelEntry",
    "Redactor",
    "SseEvent",
    "StreamBroken",
    "StreamFault",
    "StreamFaultReader",
    "StreamStalled",
    "UpstreamError",
    "coerce_settings",
    "decode_event",
    "detail_from_payload",
    "display_url",
    "error_detail",
    "iter_events",
    "iter_lines",
    "parse_retry_after",
    "read_body",
    "read_some",
    "typed_field",
    "url_secrets",
]


def __getattr__(name: str) -> Any:
    """Load the settings names (and with them pydantic) on first access."""
    if name not in _PYDANTIC_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module("hermes_core.provider_kit.settings"), name)
    globals()[name] = value
    return value
