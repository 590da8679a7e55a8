"""``hermes api --check``: verify storage, the run bus and the default model, print one line each, exit.

Every check runs even when an earlier one failed: storage that cannot be opened is a ``FAIL``
line, and the bus is still pinged, so one run tells an operator everything that is wrong. A
configuration error (an unknown backend, a missing DSN…) is still the single ``Error:`` line of
any start-up. Exit code 0 when every check passed, else 1.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes_core import Kernel, TransportContext


def storage_line(report: dict[str, Any]) -> str:
    """Describe a storage report in one line."""
    backend = report.get("backend", "?")
    if not report.get("ok"):
        return f"FAIL storage ({backend}): {report.get('message') or report.get('error')}"
    where = report.get("server") or report.get("path") or "in memory"
    details = []
    if "schema_version" in report:
        details.append(f"schema {report['schema_version']}")
    pool = report.get("pool")
    if isinstance(pool, dict):
        details.append(f"pool {pool.get('open', 0)}/{pool.get('max', '?')}")
    suffix = f" ({', '.join(details)})" if details else ""
    return f"ok   storage ({backend}): {where}{suffix}"


def bus_line(report: dict[str, Any]) -> str:
    """Describe a run bus report in one line."""
    backend = report.get("backend", "?")
    if not report.get("ok"):
        return f"FAIL bus ({backend}): {report.get('message') or report.get('error')}"
    return f"ok   bus ({backend}): {report.get('server', '')} (ping {report.get('ping_ms')} ms)"


async def bus_check(kernel: Kernel) -> dict[str, Any] | None:
    """Build the configured run bus, ping its server, close it (nothing is started).

    :returns: its report; None for a bus that stays inside this process (nothing to check).
    """
    from hermes_api_server.bus import build_bus
    from hermes_api_server.settings import ApiSettings

    backend = kernel.settings.bus.backend
    try:
        bus = build_bus(kernel, ApiSettings())
    except Exception as exc:  # a missing URL or an unknown backend is the report, not a crash
        return {"ok": False, "backend": backend, "message": str(exc)}
    try:
        if not bus.shared:
            return None
        return dict(await bus.diagnostics())
    finally:
        await bus.close()


async def run_check(ctx: TransportContext[Any]) -> int:
    """Wait for start-up, print the report on stdout; return the exit code.

    :raises hermes_core.HermesError: start-up failed for another reason than storage.
    """
    from hermes_core import StorageError

    kernel = ctx.kernel
    lines: list[str] = []
    try:
        await ctx.ready
    except StorageError as exc:
        # The kernel did not start: report it and go on with what can be checked without it.
        backend = kernel.settings.storage.backend
        report: dict[str, Any] = {"ok": False, "backend": backend, "message": str(exc)}
        started = False
    else:
        report = await kernel.sessions.storage_report()
        started = True
    lines.append(storage_line(report))
    failed = not report.get("ok")
    bus_report = await bus_check(kernel)
    if bus_report is not None:
        lines.append(bus_line(bus_report))
        failed = failed or not bus_report.get("ok")
    if not started:
        lines.append("skip model: not checked, the kernel did not start")
        lines.append("Hermes API check: FAILED")
        sys.stdout.write("\n".join(lines) + "\n")
        sys.stdout.flush()
        return 1
    model = kernel.model_status()
    if model.problem is not None:
        lines.append(f"FAIL model: {model.problem}")
        failed = True
    elif model.fallback:
        lines.append(f"warn model: {model.model} (no model configured: the offline mock only echoes)")
    else:
        lines.append(f"ok   model: {model.model}")
    lines.append(f"Hermes API check: {'FAILED' if failed else 'OK'}")
    sys.stdout.write("\n".join(lines) + "\n")
    sys.stdout.flush()
    return 1 if failed else 0
