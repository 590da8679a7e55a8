"""Budgets at the API's door (docs/reference/api-server.md#budgets): admit a request before its
turn is submitted, or answer 429 ``budget_exceeded`` with ``Retry-After`` (503
``budget_unavailable`` when the ledger cannot be reached: budgets fail closed).

Who is charged: the caller's key and its tenant (a configured or generated key is its principal
in the ``default`` tenant); the turn adds the session.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from hermes_api_server.errors import ApiError
from hermes_api_server.state import current_caller
from hermes_core import BudgetExceeded, ChargeTo, redact

if TYPE_CHECKING:
    from hermes_core import Admission, Kernel, TurnOutcome

DEFAULT_TENANT = "default"


def charge_for(principal: str, session_id: str | None = None) -> ChargeTo:
    """Return who a request filed under ``principal`` charges: the request's authenticated key and
    its tenant, or, outside a request, ``principal`` in the ``default`` tenant."""
    who = current_caller()
    if who is not None and who.owner == principal:
        return ChargeTo(key_id=who.key_id, tenant=who.tenant, session_id=session_id)
    return ChargeTo(key_id=principal, tenant=DEFAULT_TENANT, session_id=session_id)


def budget_error(exc: BudgetExceeded) -> ApiError:
    """Return the 429 (or, for an unreachable ledger, 503) of a refusal."""
    wait = str(max(1, math.ceil(exc.retry_after)))
    extra = {"limit": exc.limit, "bucket": exc.bucket, "retry_after": float(wait)}
    if exc.limit == "unavailable":
        message = "Budgets cannot be checked now (the ledger is unreachable); try again later"
        return ApiError(503, "budget_unavailable", message, headers={"Retry-After": wait}, extra=extra)
    return ApiError(429, "budget_exceeded", str(exc), headers={"Retry-After": wait}, extra=extra)


def turn_refused(outcome: TurnOutcome, headers: dict[str, str], extra: dict[str, Any]) -> ApiError:
    """Return the 429 (503 when the ledger was unreachable) of a turn the budget stopped before
    it produced any text."""
    wait = str(max(1, math.ceil(outcome.retry_after or 1.0)))
    message = redact(outcome.message or "budget exceeded")
    headers = {**headers, "Retry-After": wait}
    if outcome.layer == "storage":
        return ApiError(503, "budget_unavailable", message, headers=headers, extra=extra)
    return ApiError(429, "budget_exceeded", message, headers=headers, extra=extra)


async def admit(kernel: Kernel, principal: str, session_id: str | None = None) -> Admission | None:
    """Admit one request of ``principal`` (None when no budget is configured).

    :raises ApiError: 429 ``budget_exceeded`` / 503 ``budget_unavailable``.
    """
    if not kernel.budgets.enabled:
        return None
    try:
        return await kernel.budgets.admit(charge_for(principal, session_id))
    except BudgetExceeded as exc:
        raise budget_error(exc) from None
