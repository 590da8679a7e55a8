"""How the Messages API reports failures inside a stream: an ``error`` event with ``error.type``.

HTTP statuses need no vendor rule (the shared mapping covers them); an in-stream error carries no
status, so its type decides the kind, and overloaded or internal errors are worth retrying.
"""

from __future__ import annotations

from typing import Any

from hermes_core import provider_kit


def stream_fault(payload: Any, code: Any) -> provider_kit.StreamFault:
    """Say what kind of failure an ``error`` event of the stream is, by its ``error.type``.

    :param payload: the event's decoded data.
    :param code: its ``error.type`` as :func:`provider_kit.detail_from_payload` found it.
    """
    if code in ("rate_limit_error",):
        return provider_kit.StreamFault("rate_limit", retryable=True)
    if code in ("authentication_error", "permission_error"):
        return provider_kit.StreamFault("auth", retryable=False)
    transient = code in ("overloaded_error", "api_error", None)
    return provider_kit.StreamFault("upstream", retryable=transient, tag=f"{code or 'error'}")
