"""Environment, processes, subagents, spawn trees and attachments (docs/reference/tui-gateway.md#methods)."""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import secrets
import shlex
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_tui_gateway import cli_exec, clipboard, images
from hermes_tui_gateway.encode import token_estimate
from hermes_tui_gateway.params import GatewayError, bad, clamp, opt_bool, opt_int, opt_str, session_id

if TYPE_CHECKING:
    from hermes_tui_gateway.gateway import Conn, Gateway, Params

MAX_IMAGE = 20 * 1024 * 1024
_SAFE = re.compile(r"[^A-Za-z0-9_.\-]")


# -- reload and processes ----------------------------------------------------------------------
async def reload_mcp(gw: Gateway, conn: Conn, p: Params) -> dict[str, Any]:
    """``reload.mcp``: no plugin provides MCP-backed tools yet, so there is nothing to reload."""
    for live in list(gw.lives.values()):
        live.stream.emit_info(force=True)
    return {"status": "reloaded", "servers": []}


def _leaves(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(_leaves(v, f"{prefix}{k}."))
        return out
    return {prefix.rstrip("."): value}


async def reload_env(gw: Gateway, conn: Conn, p: Params) -> dict[str, Any]:
    """``reload.env``: re-read ``.env`` through the CLI's loader; report how many keys changed."""
    if gw.reload_settings is None:
        return {"updated": 0}
    before = _leaves(gw.kernel.settings.model_dump(mode="json"))
    try:
        await gw.reload_settings()
    except Exception as exc:
        raise GatewayError(5015, f"reload.env failed: {type(exc).__name__}") from exc
    after = _leaves(gw.kernel.settings.model_dump(mode="json"))
    return {"updated": sum(1 for k, v in after.items() if before.get(k) != v)}


async def process_stop(gw: Gateway, conn: Conn, p: Params) -> dict[str, Any]:
    """``process.stop``: end the terminal tool's background processes (3 s grace)."""
    sid = session_id(p)
    lives = [gw.lives[sid]] if sid in gw.lives else ([] if sid else list(gw.lives.values()))
    try:
        killed = sum([await live.session.stop_processes(grace=3.0) for live in lives])
    except Exception as exc:
        raise GatewayError(5010, f"process.stop failed: {type(exc).__name__}") from exc
    return {"killed": killed}


# -- subagents ---------------------------------------------------------------------------------
def delegation_status(gw: Gateway, conn: Conn, p: Params) -> dict[str, Any]:
    """``delegation.status``: no delegating tool is installed, so nothing is active."""
    return {"active": [], "paused": False, "max_spawn_depth": 0, "max_concurrent_children": 0}


def subagent_interrupt(gw: Gateway, conn: Conn, p: Params) -> dict[str, Any]:
    """``subagent.interrupt``: no subagent can exist without a delegating plugin."""
    sub = p.get("subagent_id")
    if not isinstance(sub, str) or not sub:
        raise GatewayError(4000, "subagent_id required")
    return {"found": False, "subagent_id": sub}


def subagent_steer(gw: Gateway, conn: Conn, p: Params) -> dict[str, Any]:
    """``subagent.steer``: the child is never running here, so the steer is rejected."""
    sub = p.get("subagent_id")
    if not isinstance(sub, str) or not sub:
        raise GatewayError(4000, "subagent_id required")
    text = p.get("text")
    if not isinstance(text, str) or not text.strip():
        raise GatewayError(4002, "text is required")
    gw.live(session_id(p))
    return {"status": "rejected", "subagent_id": sub, "text": text}


# -- spawn trees -------------------------------------------------------------------------------
def _tree_root(gw: Gateway) -> Path:
    return gw.data_dir / "spawn-trees"


def _save_tree(root: Path, sid: str, body: dict[str, Any], label: str | None) -> str:
    folder = root / (_SAFE.sub("_", sid) or "_global")
    folder.mkdir(parents=True, exist_ok=True)
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%S")
    while True:
        path = folder / f"{stamp}-{secrets.token_hex(2)}.json"
        if not path.exists():
            break
    tmp = folder / f".{path.name}.{secrets.token_hex(4)}.tmp"
    tmp.write_text(json.dumps(body, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, path)
    entry = {
        "path": str(path),
        "session_id": sid,
        "started_at": body.get("started_at"),
        "finished_at": body.get("finished_at"),
        "label": label,
        "count": len(body.get("subagents", [])),
    }
    with (folder / "_index.jsonl").open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(entry, ensure_ascii=False) + "\n")
    return str(path)


async def spawn_tree_save(gw: Gateway, conn: Conn, p: Params) -> dict[str, Any]:
    """``spawn_tree.save``: unique name, atomic write, index line."""
    subagents = p.get("subagents")
    if not isinstance(subagents, list) or not subagents:
        raise GatewayError(4000, "subagents list required")
    if not all(isinstance(s, dict) for s in subagents):
        raise bad("subagents", "list of objects")
    label = opt_str(p, "label")
    if label is not None and len(label) > 200:
        raise GatewayError(4002, "label is longer than 200 characters")
    sid = session_id(p)
    body = {
        "session_id": sid,
        "subagents": subagents,
        "started_at": p.get("started_at"),
        "finished_at": p.get("finished_at"),
        "label": label,
    }
    try:
        path = await gw.run_blocking(_save_tree, _tree_root(gw), sid, body, label)
    except OSError as exc:
        raise GatewayError(5000, f"spawn_tree.save failed: {exc.strerror or exc}") from exc
    return {"path": path, "session_id": sid}


def _list_trees(root: Path, sid: str, cross: bool, limit: int) -> list[dict[str, Any]]:
    if not root.is_dir():
        return []
    folders = (
        [p for p in root.iterdir() if p.is_dir()]
        if cross or not sid
        else [root / (_SAFE.sub("_", sid) or "_global")]
    )
    entries: list[dict[str, Any]] = []
    for folder in folders:
        if not folder.is_dir():
            continue
        index = folder / "_index.jsonl"
        if index.is_file():
            for line in index.read_text(encoding="utf-8", errors="replace").splitlines():
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue
                if isinstance(entry, dict) and Path(str(entry.get("path", ""))).is_file():
                    entries.append(entry)
        else:
            for file in folder.glob("*.json"):
                entries.append(
                    {
                        "path": str(file),
                        "session_id": folder.name,
                        "started_at": None,
                        "finished_at": None,
                        "label": None,
                        "count": None,
                    }
                )
    entries.sort(key=lambda e: Path(e["path"]).name, reverse=True)
    return entries[:limit]


async def spawn_tree_list(gw: Gateway, conn: Conn, p: Params) -> dict[str, Any]:
    """``spawn_tree.list``: newest first; never creates directories."""
    limit = clamp(opt_int(p, "limit", 50) or 50, 1, 1000)
    cross = opt_bool(p, "cross_session")
    entries = await gw.run_blocking(_list_trees, _tree_root(gw), session_id(p), cross, limit)
    return {"entries": entries}


async def spawn_tree_load(gw: Gateway, conn: Conn, p: Params) -> dict[str, Any]:
    """``spawn_tree.load``: symlinks and ``..`` are resolved before the containment check."""
    raw = p.get("path")
    if not isinstance(raw, str) or not raw:
        raise GatewayError(4000, "path required")
    root = _tree_root(gw).resolve()
    target = Path(raw).expanduser().resolve()
    if not target.is_relative_to(root):
        raise GatewayError(4030, "path outside spawn-trees root")
    try:
        text = await gw.run_blocking(target.read_text, "utf-8")
        data = json.loads(text)
    except (OSError, ValueError) as exc:
        raise GatewayError(5000, f"spawn_tree.load failed: {type(exc).__name__}") from exc
    return data if isinstance(data, dict) else {"data": data}


# -- attachments -------------------------------------------------------------------------------
def _split_path(raw: str) -> tuple[str, str]:
    text = raw.strip()
    if text[:1] in ("'", '"'):
        end = text.find(text[0], 1)
        if end > 0:
            return text[1:end], text[end + 1 :].strip()
    if Path(text).expanduser().exists():
        return text, ""
    try:
        parts = shlex.split(text)
    except ValueError:
        parts = text.split()
    head = parts[0] if parts else ""
    rest = text[len(head) :].strip() if text.startswith(head) else " ".join(parts[1:])
    return head, rest


def _attach(gw: Gateway, live: Any, path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise GatewayError(4016, f"file not found or not a file: {path}")
    found = images.sniff(path)
    if found is None:
        raise GatewayError(4016, "unsupported image (png, jpeg, gif or webp)")
    if path.stat().st_size > MAX_IMAGE:
        raise GatewayError(4018, "attachment too large (over 20 MiB)")
    mime, width, height = found
    live.attachments.append({"path": str(path), "mime": mime})
    out: dict[str, Any] = {
        "attached": True,
        "path": str(path),
        "count": len(live.attachments),
        "name": path.name,
    }
    if width and height:
        out.update(width=width, height=height, token_estimate=token_estimate(width, height))
    else:
        out["token_estimate"] = 85
    return out


async def image_attach(gw: Gateway, conn: Conn, p: Params) -> dict[str, Any]:
    """``image.attach``: attach an image file to the next turn."""
    live = await gw.live_checked(session_id(p))
    raw = p.get("path")
    if raw is not None and not isinstance(raw, str):
        raise bad("path", "string")
    if not raw or not raw.strip():
        raise GatewayError(4015, "path required")
    path_text, remainder = _split_path(raw)
    path = Path(path_text).expanduser()
    if not path.is_absolute():
        path = Path(live.session.info().cwd) / path
    try:
        out = await gw.run_blocking(_attach, gw, live, path)
    except OSError as exc:
        raise GatewayError(5027, f"image I/O failed: {exc.strerror or exc}") from exc
    out["remainder"] = remainder
    out["text"] = remainder
    return out


def _save_clipboard(folder: Path) -> Path | str:
    """Return the saved clipboard image, or the message saying why there is none."""
    found = clipboard.grab_png()
    if found.png is None:
        return found.message
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"clipboard-{int(time.time())}-{secrets.token_hex(2)}.png"
    path.write_bytes(found.png)
    return path


async def clipboard_paste(gw: Gateway, conn: Conn, p: Params) -> dict[str, Any]:
    """``clipboard.paste``: an image from this machine's clipboard, or ``attached:false``."""
    live = await gw.live_checked(session_id(p))
    folder = gw.data_dir / "attachments" / _SAFE.sub("_", live.session.id)
    try:
        saved = await gw.run_blocking(_save_clipboard, folder)
    except OSError as exc:
        raise GatewayError(5027, f"clipboard I/O failed: {exc.strerror or exc}") from exc
    if isinstance(saved, str):
        return {"attached": False, "message": saved}
    return await gw.run_blocking(_attach, gw, live, saved)


def register(gw: Gateway) -> None:
    """Add this module's methods to the gateway's tables."""

    def slow(fn: Any) -> Any:
        return lambda conn, p: fn(gw, conn, p)

    gw.slow.update(
        {
            "cli.exec": slow(cli_exec.cli_exec),
            "reload.mcp": slow(reload_mcp),
            "reload.env": slow(reload_env),
            "process.stop": slow(process_stop),
            "spawn_tree.save": slow(spawn_tree_save),
            "spawn_tree.list": slow(spawn_tree_list),
            "spawn_tree.load": slow(spawn_tree_load),
            "clipboard.paste": slow(clipboard_paste),
            "image.attach": slow(image_attach),
        }
    )
    gw.fast.update(
        {
            "delegation.status": slow(delegation_status),
            "subagent.interrupt": slow(subagent_interrupt),
            "subagent.steer": slow(subagent_steer),
        }
    )
