"""Which session a chat completion continues, and whether it is a frontend's task prompt
(docs/reference/api-server.md#chat-sessions).

Three sources, first match wins: ``X-Hermes-Session-Id`` (the caller names the session; history
comes from storage), a frontend's conversation id header such as Open WebUI's
``X-OpenWebUI-Chat-Id`` (one session per frontend chat), and the conversation's history (a first
turn opens a new session; a later one continues the session whose recorded transcript is the
body's history, see :mod:`hermes_api_server.chat_index`). With the last two the request body is
the truth and is reconciled with storage. A chat id is mixed with the authenticated principal and,
when the frontend forwards one, its user id; history keys are kept per principal and frontend
user. So two principals or two frontend users never share a session, and without a chat id two
conversations share one only when everything they have said is the same, word for word.
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

META_PREFIX = "### Task:"
MAX_FRONTEND_ID = 256


@dataclass(frozen=True, slots=True)
class ChatSession:
    """The session a chat request runs in.

    :param id: the effective session id ("" until :meth:`ChatIndex.place` chose it).
    :param derived: True when the body is the truth (reconciled with storage at the turn's start).
    :param by_history: no header placed the request: its history did, and its turn is recorded
        in the chat index.
    :param user: the frontend's user id, when it sends one.
    :param seeded: a new session for a history the index did not know (opened from the body).
    :param first: the id was made for this request: the chat index holds nothing of it yet.
    """

    id: str
    derived: bool
    by_history: bool = False
    user: str | None = None
    seeded: bool = False
    first: bool = False


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


def frontend_session_id(chat_id: str, principal: str, user: str | None = None) -> str:
    """Return ``api-chat-`` + 16 hex of sha256(principal NUL user NUL chat id)."""
    return "api-chat-" + _digest(principal, user or "", chat_id)


def chat_session(
    request: web.Request,
    principal: str,
    chat_id_headers: Sequence[str],
    user_id_headers: Sequence[str],
) -> ChatSession:
    """Decide the session of a chat completion request from its headers.

    Without a session or chat id header the result has ``by_history`` set and no id yet:
    :meth:`hermes_api_server.chat_index.ChatIndex.place` gives it one.

    :param request: the request (its session and frontend headers are read).
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
    return ChatSession("", derived=True, by_history=True, user=user)
