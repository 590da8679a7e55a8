"""A frontend's task prompt (``### Task:`` title, tag and follow-up requests): one tool-less model
call, stored nowhere (docs/reference/api-server.md#chat-sessions)."""

from __future__ import annotations

import logging
import math
import secrets
import time
from typing import TYPE_CHECKING

from hermes_api_server.budget_gate import admit, budget_error, charge_for
from hermes_api_server.errors import ApiError, json_response
from hermes_core import BudgetExceeded, HermesError, ProviderError, SeedMessage

if TYPE_CHECKING:
    from aiohttp import web

    from hermes_api_server.convert import Conversation
    from hermes_api_server.model_select import ModelChoice
    from hermes_api_server.state import ServerState

log = logging.getLogger("hermes.api")


def provider_failure(exc: ProviderError, message: str) -> ApiError:
    """Map a failed model call: 429 for a retryable rate limit, 503 for another retryable or a
    network failure (both with ``Retry-After``), else 502 ``provider_error``."""
    if exc.retryable or exc.kind == "network":
        wait = exc.retry_after if exc.retry_after and exc.retry_after > 0 else 1
        status = 429 if exc.kind == "rate_limit" else 503
        return ApiError(status, "provider_error", message, headers={"Retry-After": str(math.ceil(wait))})
    return ApiError(502, "provider_error", message)


async def meta_request(
    state: ServerState, conv: Conversation, choice: ModelChoice, principal: str
) -> web.Response:
    """Answer a task prompt with one model call and no session, charged to the caller's key and
    tenant (docs/reference/budgets.md#outside-a-turn), admitted as one request of the key.

    :raises ApiError: a failed call, mapped like a failed turn (see :func:`provider_failure`).
    """
    kernel = state.kernel
    # One request of the key, like a chat completion's turn: it counts against
    # requests_per_minute and holds a run slot while the call runs (429 before the call).
    admission = await admit(kernel, principal)
    state.active_turns += 1
    try:
        messages = [*conv.history, SeedMessage(role="user", text=conv.text)]
        # The frontend's task prompt is the instruction; its system text, if any, goes along
        # as the system prompt so the upstream sees the request the frontend made.
        text = await kernel.models.one_shot(
            messages,
            model=choice.ref,
            purpose="one_shot",
            system=conv.system or None,
            charge=admission.charge if admission is not None else charge_for(principal),
        )
    except BudgetExceeded as exc:  # the call was not made (docs/reference/budgets.md#outside-a-turn)
        raise budget_error(exc) from None
    except ProviderError as exc:
        message = kernel.redactor(str(exc) or "The model call failed")
        log.warning("task prompt failed: provider_error (%s): %s", exc.kind, message)
        raise provider_failure(exc, message) from None
    except HermesError as exc:
        message = kernel.redactor(str(exc) or "The model call could not be made")
        log.warning("task prompt failed: %s", message)
        raise ApiError(502, "agent_incomplete", message) from None
    finally:
        state.active_turns -= 1
        if admission is not None:
            await kernel.budgets.release(admission)
    payload = {
        "id": "chatcmpl-" + secrets.token_hex(12),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": choice.requested,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        "hermes": {"meta_request": True, "model": choice.ref or kernel.default_model or ""},
    }
    return json_response(payload)
