"""Permission requests (docs/reference/acp.md#permissions): a core approval question becomes
``session/request_permission``.

The request reuses the announced ``toolCallId``; the options are the four of
docs/reference/acp.md#permission-options in their fixed order (each offered only when the core allows that
choice). When the question closes without the client's answer (deadline, cancel, close), the request is
withdrawn with ``$/cancel_request``. Anything but an offered allow option counts as a denial.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from hermes_acp import toolcalls
from hermes_core import QuestionRequested
from hermes_core.rpc import PeerClosedError, RpcError

if TYPE_CHECKING:
    from hermes_acp.conn import AcpConnection
    from hermes_acp.state import AcpSession

log = logging.getLogger("hermes_acp")

ALLOW_ONCE = {"optionId": "allow_once", "name": "Allow once", "kind": "allow_once"}
ALLOW_SESSION = {"optionId": "allow_session", "name": "Allow for this session", "kind": "allow_always"}
ALLOW_ALWAYS = {"optionId": "allow_always", "name": "Always allow", "kind": "allow_always"}
REJECT_ONCE = {"optionId": "reject_once", "name": "Reject", "kind": "reject_once"}
CHOICES = {"allow_once": "once", "allow_session": "session", "allow_always": "always", "reject_once": "deny"}


def offered_options(question: QuestionRequested) -> list[dict[str, str]]:
    """Return the options to offer for an approval, in the fixed order.

    :param question: the core's approval question.
    :returns: ``PermissionOption`` objects.
    """
    choices = set(question.choices or ("once", "deny"))
    options = [dict(ALLOW_ONCE)]
    if question.allow_session and "session" in choices:
        options.append(dict(ALLOW_SESSION))
    if question.persistable and "always" in choices:
        options.append(dict(ALLOW_ALWAYS))
    options.append(dict(REJECT_ONCE))
    return options


def permission_tool_call(acp_session: AcpSession, question: QuestionRequested) -> dict[str, Any]:
    """Return the ``toolCall`` of a permission request: the announced call, always with content.

    :param acp_session: the session.
    :param question: the approval question.
    :returns: a ``ToolCallUpdate`` object.
    """
    call_id = question.call_id or question.request_id
    if question.task_id and f"subagent-{question.task_id}" in acp_session.calls:
        call_id = f"subagent-{question.task_id}"  # a child's question: point at the child's call
    state = acp_session.calls.get(call_id)
    announced = dict(state.tool_call) if state is not None else {}
    announced.pop("sessionUpdate", None)
    name = question.tool_name or "tool"
    tool_call: dict[str, Any] = {
        "toolCallId": call_id,
        "title": announced.get("title") or name,
        "kind": announced.get("kind") or "other",
        "status": "pending",
    }
    if announced.get("locations"):
        tool_call["locations"] = announced["locations"]
    elif question.paths:
        tool_call["locations"] = [{"path": p} for p in question.paths]
    if announced.get("content"):
        tool_call["content"] = announced["content"]
    elif question.command_redacted:
        tool_call["content"] = [toolcalls.text_block(f"$ {question.command_redacted}")]
    else:
        tool_call["content"] = [toolcalls.text_block(question.description or f"Run {name}")]
    return tool_call


async def ask(conn: AcpConnection, acp_session: AcpSession, question: QuestionRequested) -> None:
    """Ask the client about one approval and give the core its answer.

    :param conn: the connection.
    :param acp_session: the session.
    :param question: the approval question.
    """
    peer = conn.peer
    assert peer is not None
    options = offered_options(question)
    params = {
        "sessionId": acp_session.id,
        "toolCall": permission_tool_call(acp_session, question),
        "options": options,
    }
    try:
        request = peer.start_request("session/request_permission", params)
    except PeerClosedError:
        conn.kernel.answer(question.request_id, "deny")
        return
    acp_session.permissions[question.request_id] = request
    choice = "deny"
    try:
        result = await request.future
    except asyncio.CancelledError:
        return  # withdrawn: the question closed without the client's answer
    except (RpcError, PeerClosedError) as exc:
        log.warning("permission request for %s failed (%s); denying", question.call_id, exc)
        result = None
    finally:
        acp_session.permissions.pop(question.request_id, None)
        request.discard()
    choice = _choice(result, options)
    outcome = conn.kernel.answer(question.request_id, choice)
    if outcome != "ok":
        log.info("permission answer for %s came too late (%s); ignored", question.call_id, outcome)


def _choice(result: Any, options: list[dict[str, str]]) -> str:
    outcome = result.get("outcome") if isinstance(result, dict) else None
    if not isinstance(outcome, dict):
        if result is not None:
            log.warning("malformed permission answer %r; denying", result)
        return "deny"
    if outcome.get("outcome") == "cancelled":
        return "deny"
    if outcome.get("outcome") != "selected":
        log.warning("malformed permission outcome %r; denying", outcome)
        return "deny"
    option_id = outcome.get("optionId")
    if option_id not in {o["optionId"] for o in options}:
        log.warning("permission answer named an option that was not offered: %r; denying", option_id)
        return "deny"
    return CHOICES[str(option_id)]


def withdraw(conn: AcpConnection, acp_session: AcpSession, question_id: str) -> None:
    """Withdraw a pending permission request whose question closed without the client's answer.

    :param conn: the connection.
    :param acp_session: the session.
    :param question_id: the core question id.
    """
    request = acp_session.permissions.pop(question_id, None)
    if request is None or request.future.done():
        return
    request.discard()
    if conn.peer is not None:
        conn.peer.notify("$/cancel_request", {"requestId": request.id})
