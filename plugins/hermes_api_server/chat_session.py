"""Which session a chat completion continues, and whether it is a frontend's task prompt
(docs/reference/api-server.md#chat-sessions).

Three sources, first match wins: ``X-Hermes-Session-Id`` (the caller names the session; history
comes from storage), a frontend's conversation id header such as Open WebUI's
``X-OpenWebUI-Chat-Id`` (one session per frontend chat), and the conversation's opener (system
text and first user message). The last two are *derived* ids: the request body is the truth and
is reconciled with storage. Every derived id mixes in the authenticated principal and, when the
frontend forwards one, its user id, so two principals or two frontend users never share one.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hermes_api_server.errors import ApiError
from hermes_api_server.http_util import CONTROL_RE, header_session_id

if TYPE_CHECKING:
    from collections.abc import Sequence

    from aiohttp import web

    from hermes_api_server.convert import Conversation

META_PREFIX = "### Task:"
MAX_FRONTEND_ID = 256


@dataclass(frozen=True, slots=True)
class ChatSession:
    """The session a chat request runs in.

    :param id: the effective session id.
    :param derived: True when the body is the truth (reconciled with storage at the turn's start).
    """

    id: str
    derived: bool


def is_meta_request(text: str) -> bool:
    """Tell whether a user message is a frontend's title/tag/follow-up task prompt."""
    return text.lstrip().startswith(META_PREFIX)


def frontend_value(request: web.Request, names: Sequence[str]) -> str | None:
    """Return the first non-empty value among the headers ``names``, validated.

    :raises ApiError: 400 ``invalid_value`` for a value over 256 characters or holding a control
        character (it seeds a session id and must be what the frontend meant).
    """
    for name in names:
        value = request.headers.get(name, "").strip()
        if not value:
            continue
        if len(value) > MAX_FRONTEND_ID or CONTROL_RE.search(value):
            raise ApiError(
                400,
                "invalid_value",
                f"{name} must be 1-{MAX_FRONTEND_ID} characters without control characters",
                param=name,
            )
        return value
    return None


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()[:16]


def derived_session_id(system: str, first_user: str, principal: str, user: str | None = None) -> str:
    """Return ``api-`` + 16 hex of sha256(principal NUL [user NUL] system LF first user text)."""
    opener = f"{system}\n{first_user}"
    return "api-" + (_digest(principal, opener) if user is None else _digest(principal, user, opener))


def frontend_session_id(chat_id: str, principal: str, user: str | None = None) -> str:
    """Return ``api-chat-`` + 16 hex of sha256(principal NUL user NUL chat id)."""
    return "api-chat-" + _digest(principal, user or "", chat_id)


def chat_session(
    request: web.Request,
    conv: Conversation,
    principal: str,
    chat_id_headers: Sequence[str],
    user_id_headers: Sequence[str],
) -> ChatSession:
    """Decide the session of a chat completion request.

    :param request: the request (its session and frontend headers are read).
    :param conv: the converted body.
    :param principal: the authenticated principal.
    :param chat_id_headers: headers that carry a frontend's conversation id (setting).
    :param user_id_headers: headers that carry a frontend's user id (setting).
    :raises ApiError: 400 for a malformed session or frontend header.
    """
    header_id = header_session_id(request)
    if header_id is not None:
        return ChatSession(header_id, derived=False)
    user = frontend_value(request, user_id_headers)
    chat = frontend_value(request, chat_id_headers)
    if chat is not None:
        return ChatSession(frontend_session_id(chat, principal, user), derived=True)
    first_user = next((m.text for m in conv.history if m.role == "user"), conv.text)
    return ChatSession(derived_session_id(conv.system, first_user, principal, user), derived=True)
