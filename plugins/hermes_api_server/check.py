"""``hermes api --check``: verify storage and the default model, print one line each, exit.

Start-up already opened (and migrated) storage, so a server that cannot be reached ends the
command before this runs, with one ``Error:`` line. Exit code 0 when every check passed, else 1.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes_core import Kernel


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


async def run_check(kernel: Kernel) -> int:
    """Print the report on stdout; return the exit code."""
    lines: list[str] = []
    report = await kernel.sessions.storage_report()
    lines.append(storage_line(report))
    failed = not report.get("ok")
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
