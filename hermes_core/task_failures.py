"""The kernel's background tasks: kept alive while they run, and what they raise reported, so that
no failure goes unretrieved."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

log = logging.getLogger("hermes.kernel")


def report_failure(task: asyncio.Task[Any]) -> None:
    """Log the exception a finished task raised (a done callback; cancellation is not a failure).

    Reading it here also keeps asyncio from reporting it as "never retrieved" when the task is
    collected.
    """
    if task.cancelled():
        return
    exc = task.exception()
    if exc is not None:
        log.warning("background task %s failed", task.get_name(), exc_info=exc)


def keep(tasks: set[asyncio.Task[Any]], task: asyncio.Task[Any]) -> asyncio.Task[Any]:
    """Hold ``task`` in ``tasks`` until it ends, then report its failure; return it."""
    tasks.add(task)
    task.add_done_callback(tasks.discard)
    task.add_done_callback(report_failure)
    return task
