"""Answer ``get_state`` while the CLI is still loading (docs/reference/pi.md#start-up).

pi's hosts start a process and ask ``get_state`` first, often once per pooled process. For a new
session nothing in that answer needs the kernel except what the settings decide (the model, the
thinking level, auto-compaction, the session directory), so a full start caches it: the factory
stores its own ``get_state`` answer in ``<user cache dir>/pi-early.json`` under a key made of the
command line and the CLI's settings fingerprint (the environment, ``config.toml`` and ``.env``).

``hermes pi`` declares :func:`begin` in the ``hermes.early`` group. When the key is cached, it
mints the session id, protects stdout and starts a thread that answers every ``get_state`` at the
head of stdin from the cache, with that id; it stops at the first other command. The factory then
takes over (:func:`take`): it opens the session under the minted id, so later answers agree, and
reads the bytes the thread had read first. On a miss nothing is answered early and the factory
fills the cache. After start-up the factory compares the real answer with the cached one and
replaces a stale entry (logged), so a change the fingerprint misses costs one stale answer once.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import select
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes_core.rpc import ProtectedStdout

CACHE_NAME = "pi-early.json"
MAX_ENTRIES = 32
POLL_S = 0.01
LINE_CAP = 1 << 20
#: Flags whose value goes into the key; any other argument (``--session``) means no early answer.
_VALUED = frozenset({"--mode", "--model", "--provider", "--thinking", "--name", "--session-dir"})
_BARE = frozenset({"--no-session", "--no-themes"})

_pending: EarlyState | None = None


@dataclass(slots=True)
class EarlyState:
    """What :func:`begin` leaves for the factory.

    :param key: the cache key of this command line and settings.
    :param cache_path: the cache file.
    :param session_id: the id of the session to open (answered early when ``cached``).
    :param cached: the cached ``get_state`` answer, or None on a miss.
    :param guard: the protected stdout, when the thread answers.
    """

    key: str
    cache_path: Path
    session_id: str
    cached: dict[str, Any] | None = None
    guard: ProtectedStdout | None = None
    rest: bytes = b""
    answered: int = 0
    _thread: threading.Thread | None = None
    _stop: threading.Event = field(default_factory=threading.Event)


def cacheable(args: Sequence[str]) -> bool:
    """Tell whether a command line opens a new session that an early answer can describe."""
    index = 0
    while index < len(args):
        arg = args[index]
        if arg in _BARE:
            index += 1
        elif arg in _VALUED and index + 1 < len(args):
            index += 2
        else:
            return False
    return True


def begin(args: list[str], selected: Callable[[str], bool] | None = None, early: Any = None) -> None:
    """Answer early ``get_state`` commands from the cache when it holds this command line.

    :param args: the arguments after ``pi``.
    :param selected: tells whether the plugin selection includes a plugin (unused).
    :param early: the CLI's ``EarlyContext`` (fingerprint and cache directory); None: no early step.
    """
    global _pending
    if early is None or _pending is not None or not cacheable(args):
        return
    try:
        from hermes_core import mint_session_id

        key = hashlib.sha256(json.dumps([early.fingerprint(), args]).encode()).hexdigest()
        state = EarlyState(key, early.cache_dir / CACHE_NAME, mint_session_id())
        state.cached = _read(state.cache_path).get(key)
        if state.cached is not None and not os.isatty(0):
            from hermes_core.rpc import protect_stdout

            state.guard = protect_stdout("stderr")
            state._thread = threading.Thread(
                target=_answer, args=(state,), name="hermes-pi-early", daemon=True
            )
            state._thread.start()
    except Exception:
        return
    _pending = state


def take() -> EarlyState | None:
    """Stop the early thread, if one runs, and return what it left (None without an early step)."""
    global _pending
    state, _pending = _pending, None
    if state is not None and state._thread is not None:
        state._stop.set()
        state._thread.join()
    return state


def answer_for(cached: dict[str, Any], session_id: str) -> dict[str, Any]:
    """Return the cached ``get_state`` data for a new session with ``session_id``."""
    data = dict(cached)
    old = data.get("sessionId", "")
    data["sessionId"] = session_id
    if isinstance(data.get("sessionFile"), str) and old:
        path = Path(data["sessionFile"])
        data["sessionFile"] = str(path.with_name(path.name.replace(old, session_id, 1)))
    return data


def remember(state: EarlyState, data: dict[str, Any]) -> bool:
    """Store the real ``get_state`` answer under the state's key; say whether the early one was stale."""
    stale = state.cached is not None and answer_for(state.cached, state.session_id) != data
    if state.cached is not None and not stale:
        return False
    entries = _read(state.cache_path)
    entries.pop(state.key, None)
    entries[state.key] = data
    while len(entries) > MAX_ENTRIES:
        entries.pop(next(iter(entries)))
    with contextlib.suppress(OSError):
        state.cache_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = state.cache_path.with_name(f".{CACHE_NAME}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"version": 1, "entries": entries}), encoding="utf-8")
        os.replace(tmp, state.cache_path)
    return stale


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    entries = data.get("entries") if isinstance(data, dict) and data.get("version") == 1 else None
    return dict(entries) if isinstance(entries, dict) else {}


def _answer(state: EarlyState) -> None:
    """Answer the ``get_state`` lines at the head of stdin; leave the rest for the factory."""
    assert state.guard is not None and state.cached is not None
    buffer = b""
    while not state._stop.is_set():
        try:
            ready, _, _ = select.select([0], [], [], POLL_S)
            if not ready:
                continue
            chunk = os.read(0, 1 << 16)
        except (OSError, ValueError):
            break
        if not chunk:
            break
        buffer += chunk
        while b"\n" in buffer:
            line, _, after = buffer.partition(b"\n")
            response = _response(line, state)
            if response is None:
                state.rest = buffer
                return
            try:
                os.write(state.guard.frame_fd, response)
            except OSError:
                state.rest = buffer
                return
            state.answered += 1
            buffer = after
        if len(buffer) > LINE_CAP:
            break
    state.rest = buffer


def _response(line: bytes, state: EarlyState) -> bytes | None:
    """Return the encoded response when ``line`` is a plain ``get_state``; else None."""
    try:
        command = json.loads(line)
    except ValueError:
        return None
    if not isinstance(command, dict) or command.get("type") != "get_state" or set(command) - {"type", "id"}:
        return None
    record: dict[str, Any] = {"type": "response", "command": "get_state", "success": True}
    command_id = command.get("id")
    if isinstance(command_id, str) or (isinstance(command_id, int) and not isinstance(command_id, bool)):
        record = {"id": command_id, **record}
    elif "id" in command:
        return None
    assert state.cached is not None
    record["data"] = answer_for(state.cached, state.session_id)
    return (json.dumps(record, separators=(",", ":"), ensure_ascii=False) + "\n").encode("utf-8")
