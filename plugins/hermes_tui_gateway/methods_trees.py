"""Saved spawn trees (docs/reference/tui-gateway.md#subagents): ``spawn_tree.save``, ``.list``, ``.load``."""

from __future__ import annotations

import datetime as _dt
import json
import logging
import os
import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from hermes_tui_gateway import tenancy
from hermes_tui_gateway import wire_params_ops as wp
from hermes_tui_gateway import wire_results_ops as wr
from hermes_tui_gateway.params import SAFE_NAME, GatewayError, bad, clamp

if TYPE_CHECKING:
    from hermes_tui_gateway.gateway import Conn, Gateway, Params

log = logging.getLogger("hermes.tui")


def _tree_root(gw: Gateway) -> Path:
    return gw.data_dir / "spawn-trees"


def _save_tree(root: Path, sid: str, body: dict[str, Any], label: str | None) -> str:
    folder = root / (SAFE_NAME.sub("_", sid) or "_global")
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


async def spawn_tree_save(gw: Gateway, conn: Conn, p: Params) -> wr.SpawnTreeSaved:
    """``spawn_tree.save``: unique name, atomic write, index line."""
    q = wp.parse(wp.SpawnTreeSaveParams, p)
    subagents = q.subagents
    if not isinstance(subagents, list) or not subagents:
        raise GatewayError(4000, "subagents list required")
    if not all(isinstance(s, dict) for s in subagents):
        raise bad("subagents", "list of objects")
    label = q.label
    if label is not None and len(label) > 200:
        raise GatewayError(4002, "label is longer than 200 characters")
    sid = q.session_id
    body = {
        "session_id": sid,
        "subagents": subagents,
        "started_at": q.started_at,
        "finished_at": q.finished_at,
        "label": label,
    }
    try:
        path = await gw.run_blocking(_save_tree, _tree_root(gw), sid, body, label)
    except OSError as exc:
        raise GatewayError(5000, f"spawn_tree.save failed: {exc.strerror or exc}") from exc
    return {"path": path, "session_id": sid}


async def auto_save(gw: Gateway, sid: str, subagent_ids: list[str]) -> None:
    """Store the tree of the children a turn of ``sid`` started (and their descendants)."""
    table = gw.kernel.sessions.children
    wanted = set(subagent_ids)
    subs = []
    for sub in table.children(sid, recursive=True):
        if sub.subagent_id in wanted or sub.parent_id in wanted:
            wanted.add(sub.subagent_id)
            subs.append(sub.snapshot())
    if not subs:
        return
    ended = [s["ended_at"] for s in subs if s["ended_at"] is not None]
    body = {
        "session_id": sid,
        "subagents": subs,
        "started_at": min(s["started_at"] for s in subs),
        "finished_at": max(ended) if len(ended) == len(subs) else None,
        "label": "auto",
    }
    try:
        await gw.run_blocking(_save_tree, _tree_root(gw), sid, body, "auto")
    except OSError:
        log.warning("tui: storing the spawn tree of %s failed", sid, exc_info=True)


def _list_trees(root: Path, sid: str, cross: bool, limit: int) -> list[wr.SpawnTreeEntry]:
    if not root.is_dir():
        return []
    folders = (
        [p for p in root.iterdir() if p.is_dir()]
        if cross or not sid
        else [root / (SAFE_NAME.sub("_", sid) or "_global")]
    )
    entries: list[wr.SpawnTreeEntry] = []
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
                    entries.append(_entry(entry))
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
    # Newest first: by the second in the name, then (within one second) by the order written.
    order = {id(e): i for i, e in enumerate(entries)}
    entries.sort(key=lambda e: (Path(e["path"]).name[:15], order[id(e)]), reverse=True)
    return entries[:limit]


def _entry(line: dict[str, Any]) -> wr.SpawnTreeEntry:
    """One index line as a list entry (a line written by an older version may lack a field)."""
    count = line.get("count")
    label = line.get("label")
    return {
        "path": str(line["path"]),
        "session_id": str(line.get("session_id", "")),
        "started_at": line.get("started_at"),
        "finished_at": line.get("finished_at"),
        "label": label if isinstance(label, str) else None,
        "count": count if type(count) is int else None,
    }


async def spawn_tree_list(gw: Gateway, conn: Conn, p: Params) -> wr.SpawnTreeList:
    """``spawn_tree.list``: newest first; never creates directories."""
    q = wp.parse(wp.SpawnTreeListParams, p)
    limit = clamp(q.limit or 50, 1, 1000)
    restricted = tenancy.tenant() is not None
    entries = await gw.run_blocking(
        _list_trees, _tree_root(gw), q.session_id, q.cross_session, 1000 if restricted else limit
    )
    if restricted:
        shown = await _seen(gw, [e["session_id"] for e in entries])
        entries = [e for e in entries if e["session_id"] in shown][:limit]
    return {"entries": entries}


async def _seen(gw: Gateway, session_ids: list[str]) -> set[str]:
    """The session ids whose trees the current connection sees: its tenant's sessions (trees of
    no session are the ``default`` tenant's)."""
    from hermes_core import DEFAULT_TENANT

    named = [sid for sid in session_ids if sid and sid != "_global"]
    # A tree may name any id (spawn_tree.save takes it from the client): not known to exist.
    shown = await tenancy.seen(gw.tenants, named, exists=False) | {sid for sid in named if sid in gw.lives}
    if tenancy.tenant() == DEFAULT_TENANT:
        shown |= {sid for sid in session_ids if not sid or sid == "_global"}
    return shown


def _read_tree(target: Path) -> wr.SpawnTree:
    """Read one stored tree; a missing, non-file or non-tree path is a ``4016``, other I/O ``5000``."""
    try:
        found = target.is_file()
    except OSError:  # a name too long for the file system, say
        found = False
    if not found:
        raise GatewayError(4016, "no spawn tree at this path (see spawn_tree.list)", {"path": str(target)})
    try:
        data = json.loads(target.read_text("utf-8"))
    except ValueError:
        data = None
    except OSError as exc:
        raise GatewayError(5000, f"spawn_tree.load failed: {exc.strerror or type(exc).__name__}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("subagents"), list):
        raise GatewayError(4016, "this file is not a spawn tree", {"path": str(target)})
    return cast("wr.SpawnTree", data)  # a file this gateway wrote (checked: an object with subagents)


async def spawn_tree_load(gw: Gateway, conn: Conn, p: Params) -> wr.SpawnTree:
    """``spawn_tree.load``: symlinks and ``..`` are resolved before the containment check."""
    raw = wp.parse(wp.SpawnTreeLoadParams, p).path
    if not isinstance(raw, str) or not raw:
        raise GatewayError(4000, "path required")
    if "\x00" in raw or len(raw) > 4096:
        raise GatewayError(4002, "path is not a valid file path")
    root = _tree_root(gw).resolve()
    try:
        target = Path(raw).expanduser().resolve()
    except (OSError, RuntimeError, ValueError):
        raise GatewayError(4002, "path is not a valid file path") from None
    if not target.is_relative_to(root):
        raise GatewayError(4030, "path outside spawn-trees root")
    tree = await gw.run_blocking(_read_tree, target)
    if tenancy.tenant() is not None and str(tree.get("session_id") or "") not in await _seen(
        gw, [str(tree.get("session_id") or "")]
    ):
        # Another tenant's tree: answered as for a path with no tree.
        raise GatewayError(4016, "no spawn tree at this path (see spawn_tree.list)", {"path": str(target)})
    return tree


def register(gw: Gateway) -> None:
    """Add this module's methods to the gateway's tables."""

    def bind(fn: Any) -> Any:
        return lambda conn, p: fn(gw, conn, p)

    gw.slow.update(
        {
            "spawn_tree.save": bind(spawn_tree_save),
            "spawn_tree.list": bind(spawn_tree_list),
            "spawn_tree.load": bind(spawn_tree_load),
        }
    )
