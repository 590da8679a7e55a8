"""How OpenAI-compatible servers report failures, where the shared status mapping needs telling.

A 429 whose code says the quota or the billing limit is used up is not worth retrying. An error
object inside the stream carries an HTTP status (as its ``code``, or as ``error.status`` on
OpenRouter) or a rate-limit code; the status decides its kind.
"""

from __future__ import annotations

from typing import Any

from hermes_core import provider_kit

QUOTA_CODES = ("insufficient_quota", "billing_hard_limit_reached")


def stream_fault(payload: Any, code: Any) -> provider_kit.StreamFault:
    """Say what kind of failure an ``error`` object received inside the stream is.

    :param payload: the decoded chunk that carried the error.
    :param code: its ``code`` (or ``type``) as :func:`provider_kit.detail_from_payload` found it.
    """
    status = code if isinstance(code, int) else None
    if status is None and isinstance(payload, dict):
        inner = payload.get("error")
        if isinstance(inner, dict) and isinstance(inner.get("status"), int):
            status = inner["status"]
    if status == 429 or code in ("rate_limit_exceeded", "rate_limit_error"):
        return provider_kit.StreamFault("rate_limit", retryable=True, status=status)
    if status in (401, 403):
        return provider_kit.StreamFault("auth", retryable=False, status=status)
    client_fault = status is not None and 400 <= status < 500
    return provider_kit.StreamFault("upstream", retryable=not client_fault, status=status)
