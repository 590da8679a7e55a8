"""What a composer asks while the user types (docs/reference/tui-gateway.md#composer-helpers):
``complete.slash``, ``complete.path``, ``input.detect_drop`` and ``shell.exec``.

These are the methods a terminal UI such as the Ink TUI calls around the input line: completion
menus, recognising a dropped file, and ``!command`` lines. None of them touches a transcript.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
import time
from pathlib import Path
from typing import TYPE_CHECKING

from hermes_core import approvals, expand_home
from hermes_tui_gateway import images
from hermes_tui_gateway import wire_params_ops as wp
from hermes_tui_gateway import wire_results_cmds as wrc
from hermes_tui_gateway import wire_results_ops as wr
from hermes_tui_gateway.encode import token_estimate
from hermes_tui_gateway.methods_attach import MAX_IMAGE
from hermes_tui_gateway.params import GatewayError, bad

if TYPE_CHECKING:
    from hermes_tui_gateway.gateway import Conn, Gateway, Live, Params

MAX_ITEMS = 30
SHELL_TIMEOUT_S = 30.0
STDOUT_TAIL = 4000
STDERR_TAIL = 2000
#: Commands the Ink TUI runs itself; completed like ours so typing ``/de`` offers ``/details``.
TUI_LOCAL = {
    "compact": "Toggle compact display mode",
    "details": "Control agent detail visibility",
    "logs": "Show recent gateway log lines",
    "mouse": "Set mouse tracking preset [on|off|toggle|wheel|buttons|all]",
}
_PATH_STARTS = ("/", "~", "./", "../", "file://")


def _item(text: str, display: str, meta: str = "") -> wr.CompletionItem:
    return {"text": text, "display": display, "meta": meta}


def complete_slash(gw: Gateway, conn: Conn, p: Params) -> wr.CompletionResult:
    """``complete.slash``: command names (and a command's subcommands after a space).

    :returns: ``{items: [{text, display, meta}], replace_from}``; the host replaces the input from
        ``replace_from`` on with an item's ``text`` (for a name, from 1 with ``/name``).
    """
    text = wp.parse(wp.CompleteSlashParams, p).text
    if not text.startswith("/"):
        return {"items": []}
    registry = gw.kernel.registry
    if " " in text:
        name, _, rest = text[1:].partition(" ")
        spec = registry.command(name)
        word = rest.rsplit(" ", 1)[-1]
        subs = list(spec.subcommands) if spec is not None and " " not in rest.strip() else []
        items = [_item(s, s) for s in subs if s.startswith(word) and s != word]
        return {"items": items[:MAX_ITEMS], "replace_from": text.rfind(" ") + 1}
    typed = text[1:].lower()
    found: dict[str, str] = {}
    for name, spec in sorted(registry.commands.items()):
        if name.startswith(typed):
            found.setdefault(f"/{name}", spec.summary if spec.name == name else f"alias of /{spec.name}")
    for name, summary in TUI_LOCAL.items():
        if name.startswith(typed):
            found.setdefault(f"/{name}", summary)
    items = [_item(cmd, cmd, meta) for cmd, meta in sorted(found.items()) if cmd != text]
    return {"items": items[:MAX_ITEMS], "replace_from": 1}


def _completion_root(gw: Gateway, conn: Conn, q: wp.WorkspaceParams) -> Path:
    """The folder relative paths complete in: ``cwd``, else the session's, else the caller's
    newest session's, else the gateway's own folder."""
    raw = q.cwd
    if raw and "\x00" in raw:
        raise bad("cwd", "a folder path (no NUL character)")
    if raw:
        return expand_home(raw)
    sid = q.session_id
    live = gw.lives.get(sid) if sid else None
    if live is None:
        mine = [lv for lv in gw.lives.values() if lv.conn is conn]
        live = max(mine, key=lambda lv: lv.created) if mine else None
    return Path(live.session.info().cwd) if live is not None else Path.cwd()


def _list_dir(root: Path, word: str) -> list[wr.CompletionItem]:
    """Return the entries completing ``word``, written the way ``word`` was (``~/``, ``./``, absolute)."""
    expanded = os.path.expanduser(word)
    folder_part, _, prefix = expanded.rpartition("/")
    typed_folder = word[: len(word) - len(prefix)]
    if expanded.startswith("/"):
        folder = Path(folder_part or "/")
    else:
        folder = root / folder_part if folder_part else root
    if not folder.is_dir():
        return []
    items: list[wr.CompletionItem] = []
    low = prefix.lower()
    for entry in sorted(os.listdir(folder)):
        if low and not entry.lower().startswith(low):
            continue
        if entry.startswith(".") and not prefix.startswith("."):
            continue
        is_dir = (folder / entry).is_dir()
        suffix = "/" if is_dir else ""
        items.append(_item(f"{typed_folder}{entry}{suffix}", entry + suffix, "dir" if is_dir else ""))
        if len(items) >= MAX_ITEMS:
            break
    return items


async def complete_path(gw: Gateway, conn: Conn, p: Params) -> wr.CompletionResult:
    """``complete.path``: files and folders completing ``word`` (``@`` references complete to nothing)."""
    q = wp.parse(wp.CompletePathParams, p)
    word = q.word
    if not word or word.startswith("@") or "\x00" in word:
        return {"items": []}
    root = _completion_root(gw, conn, q)
    try:
        items = await gw.run_blocking(_list_dir, root, word)
    except OSError:
        items = []
    return {"items": items}


def _dropped_path(text: str, cwd: Path) -> tuple[Path, str] | None:
    """Return the existing file a line starts with (a dragged-in path) and the text after it."""
    stripped = text.strip()
    quote = stripped[:1] if stripped[:1] in ("'", '"') else ""
    body = stripped[1:] if quote else stripped
    if not body.startswith(_PATH_STARTS) or "\x00" in body:
        return None
    candidates: list[tuple[str, str]] = []
    if quote and quote in body:
        head, _, rest = body.partition(quote)
        candidates.append((head, rest.strip()))
    else:
        candidates.append((body, ""))
        unescaped = body.replace("\\ ", "\x00")
        parts = unescaped.split(" ", 1)
        candidates.append((parts[0].replace("\x00", " "), parts[1].strip() if len(parts) > 1 else ""))
        spaces = [i for i, ch in enumerate(body) if ch == " "]
        candidates.extend((body[:i].rstrip(), body[i + 1 :].strip()) for i in reversed(spaces))
    for raw, rest in candidates:
        name = raw.removeprefix("file://")
        path = expand_home(name)
        if not path.is_absolute():
            path = cwd / path
        with contextlib.suppress(OSError, ValueError):
            if path.is_file():
                return path, rest
    return None


def _detect(live: Live, text: str) -> wrc.DropDetected:
    found = _dropped_path(text, Path(live.session.info().cwd))
    if found is None:
        return {"matched": False}
    path, rest = found
    sniffed = images.sniff(path) if path.stat().st_size <= MAX_IMAGE else None
    if sniffed is None:
        note = f"[User attached file: {path}]" + (f"\n{rest}" if rest else "")
        return {"matched": True, "is_image": False, "path": str(path), "name": path.name, "text": note}
    mime, width, height = sniffed
    live.attachments.append({"path": str(path), "mime": mime})
    out: wrc.DropDetected = {
        "matched": True,
        "is_image": True,
        "path": str(path),
        "name": path.name,
        "count": len(live.attachments),
        "text": rest or f"[User attached image: {path.name}]",
    }
    if width and height:
        out["width"], out["height"] = width, height
        out["token_estimate"] = token_estimate(width, height)
    return out


async def detect_drop(gw: Gateway, conn: Conn, p: Params) -> wrc.DropDetected:
    """``input.detect_drop``: whether a submitted line is a dragged-in file.

    An image is attached to the next turn (as ``image.attach`` would); another file becomes a
    note naming it. ``text`` is what the host should submit instead of the line.
    """
    q = wp.parse(wp.DetectDropParams, p)
    live = await gw.live_checked(q.session_id)
    text = q.text
    try:
        return await gw.run_blocking(_detect, live, text)
    except OSError:
        return {"matched": False}


async def shell_exec(gw: Gateway, conn: Conn, p: Params) -> wrc.ShellExecResult:
    """``shell.exec``: run a ``!command`` line the user typed, in the session's folder, for 30 s at most.

    Commands matching a guarded pattern (docs/reference/core.md#fixed-asks) are refused with 4005:
    those go through the agent, where they are asked about.
    """
    q = wp.parse(wp.ShellExecParams, p)
    command = q.command
    if not command or not command.strip():
        raise GatewayError(4004, "empty command")
    if "\x00" in command:
        raise GatewayError(4004, "the command contains a NUL character")
    guarded = approvals.match_guards(command)
    if guarded:
        raise GatewayError(
            4005, f"blocked ({', '.join(guarded)}): ask the agent to run it", {"patterns": guarded}
        )
    cwd = _completion_root(gw, conn, q)
    try:
        proc = await asyncio.create_subprocess_exec(
            "/bin/sh",
            "-c",
            command,
            cwd=str(cwd) if cwd.is_dir() else None,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        raise GatewayError(5003, f"shell.exec could not start: {exc.strerror or exc}") from exc
    try:
        out, err = await asyncio.wait_for(proc.communicate(), SHELL_TIMEOUT_S)
    except TimeoutError:
        raise GatewayError(5002, f"command timed out ({SHELL_TIMEOUT_S:g}s)") from None
    finally:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(proc.wait(), 5)
    redact = gw.kernel.redactor
    return {
        "stdout": redact(out.decode("utf-8", errors="replace"))[-STDOUT_TAIL:],
        "stderr": redact(err.decode("utf-8", errors="replace"))[-STDERR_TAIL:],
        "code": proc.returncode,
    }


def _save_paste(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"paste_{time.strftime('%Y%m%d_%H%M%S')}_{secrets.token_hex(3)}.txt"
    path.write_text(text, encoding="utf-8")
    return path


async def paste_collapse(gw: Gateway, conn: Conn, p: Params) -> wrc.PasteCollapsed:
    """``paste.collapse``: keep a long paste in a file; ``{placeholder, path, lines}``.

    The host shows the short placeholder in its input line and submits the full text itself.
    """
    text = wp.parse(wp.PasteCollapseParams, p).text
    if not text:
        raise GatewayError(4004, "empty paste")
    try:
        path = await gw.run_blocking(_save_paste, gw.data_dir / "pastes", text)
    except OSError as exc:
        raise GatewayError(5027, f"could not keep the paste: {exc.strerror or exc}") from exc
    lines = text.count("\n") + 1
    return {"placeholder": f"[Pasted text: {lines} lines \u2192 {path}]", "path": str(path), "lines": lines}


def register(gw: Gateway) -> None:
    """Add this module's methods to the gateway's tables."""
    gw.fast["complete.slash"] = lambda conn, p: complete_slash(gw, conn, p)
    gw.slow.update(
        {
            "complete.path": lambda conn, p: complete_path(gw, conn, p),
            "input.detect_drop": lambda conn, p: detect_drop(gw, conn, p),
            "shell.exec": lambda conn, p: shell_exec(gw, conn, p),
            "paste.collapse": lambda conn, p: paste_collapse(gw, conn, p),
        }
    )
