"""Check the storage backend for health reports and self-checks (``/health/detailed``, ``--check``)."""

from __future__ import annotations

from typing import Any

from hermes_core.storage import Storage


async def storage_report(storage: Storage, backend: str) -> dict[str, Any]:
    """Make one read through the backend and collect what it says about itself.

    A backend may offer ``diagnostics()`` (a JSON-friendly mapping: server, schema version,
    pool use…); its answer is merged in. Nothing here raises: a failure is reported.

    :param storage: the open backend.
    :param backend: its name as configured (``sqlite``, ``postgres``, ``memory``).
    :returns: ``{"ok": bool, "backend": name, ...}``; on failure also ``error`` (the exception's
        type) and ``message`` (its text; backends keep passwords out of their messages).
    """
    report: dict[str, Any] = {"ok": True, "backend": backend}
    try:
        await storage.list_sessions(limit=1)
        diagnostics = getattr(storage, "diagnostics", None)
        if diagnostics is not None:
            details = await diagnostics()
            report.update({k: v for k, v in dict(details).items() if k not in ("ok", "backend")})
    except Exception as exc:
        report.update(ok=False, error=type(exc).__name__, message=str(exc))
    return report
