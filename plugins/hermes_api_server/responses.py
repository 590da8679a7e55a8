"""``POST /v1/responses``, ``GET`` and ``DELETE /v1/responses/{id}``
(docs/reference/api-server.md#responses): reading the request and choosing where the turn runs
(:mod:`hermes_api_server.response_target`); running it is
:class:`hermes_api_server.response_job.ResponseJob`'s. Listing a response's input items and
cancelling it live in :mod:`hermes_api_server.response_input` and
:mod:`hermes_api_server.response_cancel`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiohttp import web

from hermes_api_server.convert import response_items, seed_history
from hermes_api_server.errors import ApiError, invalid, json_response
from hermes_api_server.http_util import (
    check_metadata,
    fingerprint,
    header_session_id,
    header_session_key,
    idempotency_key,
    parse_bool,
    read_json,
    strict_bool,
)
from hermes_api_server.model_select import choose_model
from hermes_api_server.pool import check_workspace
from hermes_api_server.response_input import input_items
from hermes_api_server.response_job import ResponseJob
from hermes_api_server.response_target import Target, chained_target, mint_session_id
from hermes_api_server.state import get_state, principal

if TYPE_CHECKING:
    pass


async def create_response(request: web.Request) -> web.StreamResponse:
    """Handle ``POST /v1/responses``."""
    state = get_state(request)
    who = principal(request)
    body = await read_json(request)
    conv = response_items(body.get("input"))
    items = input_items(body.get("input"), state.kernel.redactor)
    instructions = body.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise invalid("instructions must be a string", "instructions")
    background = strict_bool(body.get("background"), "background", False)
    store = strict_bool(body.get("store"), "store", True)
    if background and not store:
        raise invalid("background mode needs store: a background response is stored", "background")
    stream = parse_bool(body.get("stream"), "stream")
    metadata = check_metadata(body.get("metadata"))
    previous = body.get("previous_response_id")
    if previous is not None and (not isinstance(previous, str) or not previous):
        raise invalid("previous_response_id must be a string", "previous_response_id")
    conversation = body.get("conversation")
    if isinstance(conversation, dict):
        conversation = conversation.get("id")
        if not isinstance(conversation, str) or not conversation:
            raise invalid("conversation must be a name or an object with a string id", "conversation")
    elif conversation is not None and (not isinstance(conversation, str) or not conversation):
        raise invalid("conversation must be a name or an object with a string id", "conversation")
    history_given = body.get("conversation_history") is not None
    seed = seed_history(body.get("conversation_history"), "conversation_history")
    header_id = header_session_id(request)
    channel = header_session_key(request)
    sources = [previous is not None, conversation is not None, history_given]
    if (previous is not None and conversation is not None) or (history_given and sum(sources) > 1):
        raise ApiError(
            400, "conflicting_parameters", "Combine at most one history source", param="previous_response_id"
        )
    if header_id and any(sources):
        raise ApiError(
            400,
            "conflicting_parameters",
            "X-Hermes-Session-Id conflicts with chaining",
            param="X-Hermes-Session-Id",
        )
    choice = await choose_model(state.kernel, state.settings, body, always_resolve=False)
    workspace_value = request.headers.get("X-Hermes-Workspace")
    workspace = (
        check_workspace(workspace_value, state.workspace_roots(), "X-Hermes-Workspace")
        if workspace_value
        else None
    )
    key = None if stream else idempotency_key(request)
    if previous is not None:
        target = await chained_target(state, who, previous)
    elif conversation is not None:
        latest = await state.store.conversation(who, conversation)
        target = await chained_target(state, who, latest) if latest else Target(mint_session_id())
    elif header_id:
        target = Target(header_id)
    else:
        found = (
            await state.kernel.sessions.latest_for_channel(channel) if channel and not history_given else None
        )
        target = Target(found or mint_session_id())
    if not await state.pool.exists(target.session_id):
        target.seed = [*seed, *conv.history]
    state.admit()
    base: dict[str, Any] = {
        "model": choice.requested,
        "previous_response_id": previous,
        "conversation": {"id": conversation} if conversation else None,
        "instructions": instructions if instructions is not None else target.instructions,
        "store": store,
        "metadata": metadata,
        "tools": [],
        "parallel_tool_calls": False,
        "tool_choice": "auto",
    }
    if background:
        base["background"] = True
    job = ResponseJob(state, who, conv, choice, target, base, store, conversation, channel, workspace, items)
    if background:
        from hermes_api_server.response_background import follow, public

        obj, headers = await job.start_background()
        if stream:
            assert job.live.frames is not None
            return await follow(request, job.live.frames, -1, headers)
        return json_response(public(obj), headers=headers)
    if stream:
        return await job.stream(request)
    if key is None:
        payload, headers = await job.complete()
        return json_response(payload, headers=headers)
    fp = fingerprint({"body": body, "session_key": channel})
    (payload, headers), replayed = await state.idempotency.run((who, "responses", key), fp, job.complete)
    headers = dict(headers)
    if replayed:
        headers["Idempotency-Replayed"] = "true"
    return json_response(payload, headers=headers)


async def retrieve_response(request: web.Request) -> web.StreamResponse:
    """Return a stored response object."""
    state = get_state(request)
    response_id = request.match_info["response_id"]
    from hermes_api_server.response_background import public, settle_if_gone, stream_stored

    who = principal(request)
    stream = parse_bool(request.query.get("stream"), "stream")
    if stream:
        return await stream_stored(request, state, who, response_id)
    if request.query.get("starting_after") is not None:
        from hermes_api_server.response_background import parse_starting_after

        parse_starting_after(request.query.get("starting_after"))
    live = state.live_responses.get(response_id)
    if live is not None and live.principal == who and live.frames is not None:
        return json_response(live.builder.snapshot())  # a background response, still running
    record = await state.store.get_response(who, response_id)
    if record is None:
        raise ApiError(404, "response_not_found", f"Response not found: {response_id}", param="response_id")
    return json_response(public(await settle_if_gone(state, who, record)))


async def delete_response(request: web.Request) -> web.Response:
    """Delete a stored response (not its session's transcript)."""
    state = get_state(request)
    response_id = request.match_info["response_id"]
    if not await state.store.delete_response(principal(request), response_id):
        raise ApiError(404, "response_not_found", f"Response not found: {response_id}", param="response_id")
    return json_response({"id": response_id, "object": "response", "deleted": True})
