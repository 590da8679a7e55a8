"""``hermes acp --check``: a self-check report on stdout (docs/reference/acp.md#self-check); never reads
stdin."""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import pkgutil
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes_acp.settings import AcpSettings
    from hermes_core import TransportContext

DEPENDENCIES = ("jsonrpcserver", "pydantic", "pluggy", "stevedore", "click", "platformdirs")


class Report:
    """Collect check lines and count failures and warnings."""

    def __init__(self) -> None:
        """Start empty."""
        self.lines: list[str] = []
        self.failures = 0
        self.warnings = 0

    def add(self, status: str, name: str, detail: str) -> None:
        """Record one check.

        :param status: ``ok``, ``warn`` or ``FAIL``.
        :param name: the check name.
        :param detail: one line of detail.
        """
        if status == "FAIL":
            self.failures += 1
        elif status == "warn":
            self.warnings += 1
        self.lines.append(f"{status:<4} {name}: {detail}")
        print(self.lines[-1], flush=True)


def _count(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return "unknown version"


def _check_python(report: Report) -> None:
    ok = sys.version_info >= (3, 11)
    report.add("ok" if ok else "FAIL", "python", sys.version.split()[0])
    for name in DEPENDENCIES:
        try:
            importlib.import_module(name)
        except Exception as exc:
            report.add("FAIL", f"import {name}", str(exc))
        else:
            report.add("ok", f"import {name}", _version(name))


def _check_plugins(report: Report, ctx: TransportContext[AcpSettings]) -> None:
    registry = ctx.kernel.registry
    records = getattr(registry, "plugins", None)
    items: list[Any] = list(records.values()) if isinstance(records, dict) else list(records or [])
    if not items:
        report.add("warn", "plugins", "no plugin records available")
    for record in items:
        name = getattr(record, "name", "?")
        failed = getattr(record, "failed", None)
        version = getattr(record, "version", None) or ""
        if failed:
            report.add("FAIL", f"plugin {name}", f"failed to load: {failed}")
        else:
            report.add("ok", f"plugin {name}", str(version) or "loaded")


def _check_modules(report: Report) -> None:
    import hermes_acp

    bad = []
    for info in pkgutil.iter_modules(hermes_acp.__path__):
        try:
            importlib.import_module(f"hermes_acp.{info.name}")
        except Exception as exc:
            bad.append(f"{info.name}: {exc}")
    if bad:
        report.add("FAIL", "hermes_acp modules", "; ".join(bad))
    else:
        report.add("ok", "hermes_acp modules", "all import")


async def _check_initialize(report: Report, ctx: TransportContext[AcpSettings]) -> None:
    from hermes_acp.conn import AcpConnection
    from hermes_core import rpc

    conn = AcpConnection(ctx)
    to_peer_r, to_peer_w = os.pipe()
    from_peer_r, from_peer_w = os.pipe()

    async def never(_message: dict[str, Any]) -> None:
        return None

    peer = rpc.RpcPeer(
        reader=to_peer_r,
        writer=from_peer_w,
        dispatch=never,
        options=rpc.ACP_OPTIONS,
        fast_path=conn.fast_path,
    )
    running = asyncio.create_task(peer.run())
    try:
        request = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
        os.write(to_peer_w, (json.dumps(request) + "\n").encode())
        loop = asyncio.get_running_loop()
        line = await asyncio.wait_for(loop.run_in_executor(None, os.read, from_peer_r, 1 << 16), 5)
        reply = json.loads(line.decode().splitlines()[0])
        result = reply.get("result") or {}
        good = (
            result.get("protocolVersion") == 1
            and isinstance(result.get("agentCapabilities"), dict)
            and result.get("agentInfo", {}).get("name") == "hermes"
        )
        report.add(
            "ok" if good else "FAIL",
            "initialize",
            "static answer has the expected shape" if good else str(reply),
        )
    except Exception as exc:
        report.add("FAIL", "initialize", str(exc))
    finally:
        os.close(to_peer_w)
        await peer.aclose()
        running.cancel()
        for fd in (to_peer_r, from_peer_r, from_peer_w):
            try:
                os.close(fd)
            except OSError:
                pass


async def _check_config(report: Report, ctx: TransportContext[AcpSettings]) -> None:
    store = ctx.store
    path = getattr(store, "config_path", None)
    where = str(path) if path else "no config file path"
    try:
        await ctx.ready
    except Exception as exc:
        # The configuration could not start the kernel: this line fails, nothing after it runs.
        report.add("FAIL", "config", f"{where}: {exc}")
        return
    report.add("ok", "config", where)
    _check_model(report, ctx)
    try:
        count = await _count_sessions(ctx)
        report.add("ok", "storage", f"opens read-only ({_count(count, 'stored session')})")
    except Exception as exc:
        report.add("FAIL", "storage", str(exc))


def _check_model(report: Report, ctx: TransportContext[AcpSettings]) -> None:
    """Report the default model the way sessions will meet it."""
    status = ctx.kernel.model_status()
    if status.model is None or status.fallback:
        report.add(
            "warn",
            "model",
            "no model configured: the editor is asked to authenticate until one is; run `hermes acp --setup`",
        )
    elif status.problem is not None:
        report.add("FAIL", "model", f"{status.model}: {status.problem}; run `hermes acp --setup`")
    else:
        report.add("ok", "model", f"{status.model} (from {status.source})")


async def _count_sessions(ctx: TransportContext[AcpSettings]) -> int:
    """Count every stored session, page by page."""
    count = 0
    cursor: str | None = None
    while True:
        page = await ctx.kernel.sessions.list(limit=1000, cursor=cursor)
        count += len(page.sessions)
        cursor = page.next_cursor
        if cursor is None or not page.sessions:
            return count


async def _check_mcp(report: Report, ctx: TransportContext[AcpSettings]) -> None:
    """Connect every configured MCP server once; one line each (a broken server only warns)."""
    if not ctx.kernel.is_running:
        return
    for server in await ctx.kernel.tool_sources.reload():
        tools = _count(server.tools, "tool")
        if server.state == "ready" and server.left_out:
            left = ", ".join(server.left_out)
            report.add(
                "warn", f"mcp {server.name}", f"{server.transport}, {tools}; left out (name taken): {left}"
            )
        elif server.state == "ready":
            report.add("ok", f"mcp {server.name}", f"{server.transport}, {tools}")
        else:
            report.add(
                "warn", f"mcp {server.name}", f"{server.transport}, {server.state}: {server.error or '-'}"
            )


async def run_check(ctx: TransportContext[AcpSettings]) -> int:
    """Print the report and return 0 when nothing failed (warnings are allowed).

    :param ctx: the transport context.
    :returns: 0 or 1.
    """
    report = Report()
    _check_python(report)
    _check_plugins(report, ctx)
    _check_modules(report)
    await _check_initialize(report, ctx)
    await _check_config(report, ctx)
    await _check_mcp(report, ctx)
    if report.failures:
        print(f"Hermes ACP check: FAILED ({_count(report.failures, 'problem')})", flush=True)
        return 1
    extra = f" ({_count(report.warnings, 'warning')})" if report.warnings else ""
    print(f"Hermes ACP check: OK{extra}", flush=True)
    return 0
