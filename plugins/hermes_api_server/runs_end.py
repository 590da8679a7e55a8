"""How a run ends, exactly once (docs/reference/api-server.md#run-lifecycle, #run-bus).

The end of a run is committed on its bus first (:meth:`RunBus.settle`): only then is the terminal
event shown to readers, the status terminal and the durable record written. On a shared bus the
commit fails when another instance ended the run meanwhile (it took this one for dead: a stall
past the grace period, a partition); the run then takes that ending as its own, everywhere, and
a turn that completed here behind it is marked cut off, so nothing counts as completed that the
client was told had failed. The bus also says so while the run is still going (:meth:`RunEnds.lost`):
its turn is interrupted, so the session is released at once.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, cast

from hermes_api_server.outcomes import run_terminal
from hermes_api_server.run_event_models import RunEndFields
from hermes_api_server.run_state import TERMINAL

if TYPE_CHECKING:
    from hermes_api_server.run_state import Run
    from hermes_api_server.runs import RunManager
    from hermes_core import TurnCompleted

log = logging.getLogger("hermes.api.runs")
#: The fields of a terminal status beyond the status resource's own
#: (docs/reference/api-server.md#run-lifecycle).
END_FIELDS = (
    "error",
    "output",
    "usage",
    "completed",
    "partial",
    "interrupted",
    "error_code",
    "turn_exit_reason",
    "pending_steer",
)
#: How long a cancelled run waits for its end to be committed (the bus may be away at shutdown).
CANCELLED_SETTLE_S = 2.0


class RunEnds:
    """Settles the runs of one run manager."""

    def __init__(self, runs: RunManager) -> None:
        self.runs = runs

    async def settle(self, run: Run, status: str, event: str, fields: RunEndFields) -> None:
        """End ``run`` as ``status`` with terminal ``event`` carrying ``fields``, unless its end is
        already under way or done (the first end decides)."""
        if run.terminal or run.ending:
            return
        run.ending = True
        # What settles a run is kept and served for a day: no secret may be in it.
        clean = cast(dict[str, Any], self.runs.state.kernel.redactor.obj(fields))
        payload_fields = dict(clean)
        payload_fields.setdefault("pending_steer", None)
        payload = run.journal.payload(event, payload_fields)
        final = run.status_object()
        final.pop("approval", None)
        final.update(clean)
        final.update(
            status=status,
            updated_at=payload["timestamp"],
            last_event=event,
            last_seq=payload["seq"],
            completed=status == "completed",
            terminal_event=payload,
        )
        if run.log_anchor is not None:
            final["log"] = run.log_anchor  # the run's events are read back from the event log
        from hermes_api_server.bus import end_for_bus, from_bus

        elsewhere = await self.runs.bus.settle(run.run_id, end_for_bus(payload, final))
        if elsewhere is not None:
            await self.adopt(run, from_bus(elsewhere))
            return
        run.status = status
        run.terminal_fields = clean
        run.output = clean.get("output", run.output)
        run.usage = clean.get("usage", run.usage)
        run.approvals.clear()
        run.journal.add(payload, terminal=True)
        run.last_event = event
        run.updated_at = payload["timestamp"]
        await self.store_end(run.run_id, run.principal, final)

    async def adopt(self, run: Run, final: dict[str, Any]) -> None:
        """Take the ending another instance committed for ``run`` as its own."""
        run.ended_elsewhere = True
        run.terminal_fields = {k: final[k] for k in END_FIELDS if k in final}
        run.output = final.get("output", run.output) or ""
        run.usage = final.get("usage", run.usage)
        run.approvals.clear()
        payload = final.get("terminal_event")
        if isinstance(payload, dict):
            run.journal.set_terminal(payload)
            run.last_event = str(payload.get("event"))
            run.updated_at = float(payload.get("timestamp") or run.updated_at)
        run.status = str(final.get("status")) if final.get("status") in TERMINAL else "failed"
        await self.store_end(run.run_id, run.principal, final)

    async def store_end(self, run_id: str, principal: str, final: dict[str, Any]) -> None:
        """Write the final status durably; the first terminal status written stays."""
        try:
            kept = await self.runs.state.store.put_run(run_id, principal, final, True)
        except Exception:
            log.warning("writing the end of run %s failed", run_id, exc_info=True)
            return
        if not kept:
            stored = await self.runs.state.store.get_run(run_id)
            theirs = (stored[1].get("terminal_event") or {}) if stored is not None else {}
            if theirs != final.get("terminal_event"):
                log.warning("run %s: the stored record already holds another end; it stays", run_id)

    # -- the ways a run ends ---------------------------------------------------------------------
    async def finish(self, run: Run, done: TurnCompleted) -> None:
        """Settle the run as its turn ended."""
        status, fields = run_terminal(done, run.stop_requested)
        if status == "interrupted" and run.stop_requested:
            status = "cancelled"
            fields["turn_exit_reason"] = "interrupted_by_user"
            fields.pop("error", None)
        fields.setdefault("pending_steer", done.pending_steer)
        await self.settle(run, status, f"run.{status}", fields)
        session = run.session
        if run.ended_elsewhere and session is not None and done.assistant_row_id is not None:
            # The turn wrote its reply here after the run had been ended elsewhere: its client
            # was told the run failed, so the reply does not count as a completed one.
            try:
                await session.mark_cut_off(done.assistant_row_id, "interrupted")
            except Exception:
                log.warning("marking the reply of lost run %s cut off failed", run.run_id, exc_info=True)

    async def cancelled(self, run: Run) -> None:
        """Settle a run stopped before its turn ran."""
        fields = RunEndFields(
            output=run.output,
            usage=run.usage,
            completed=False,
            interrupted=True,
            turn_exit_reason="interrupted_by_user",
            pending_steer=None,
        )
        await self.settle(run, "cancelled", "run.cancelled", fields)

    async def failed(self, run: Run, message: str, code: str) -> None:
        """Settle a run whose turn could not run or crashed."""
        fields = RunEndFields(
            error=message,
            output=run.output,
            usage=run.usage,
            completed=False,
            partial=bool(run.output),
            error_code=code,
            turn_exit_reason="error",
            pending_steer=None,
        )
        await self.settle(run, "failed", "run.failed", fields)

    async def interrupted(self, run: Run) -> None:
        """Settle a run the server stopped (shutdown)."""
        fields = RunEndFields(
            error="The server shut down before this run settled.",
            output=run.output,
            usage=run.usage,
            completed=False,
            interrupted=True,
            turn_exit_reason="interrupted_by_system(shutdown)",
            pending_steer=None,
        )
        await self.settle(run, "interrupted", "run.interrupted", fields)

    async def interrupted_soon(self, run: Run) -> None:
        """:meth:`interrupted`, giving up after a moment if the bus cannot commit it (then the
        bus's reaper ends the run once this instance is gone)."""
        try:
            await asyncio.wait_for(self.interrupted(run), CANCELLED_SETTLE_S)
        except TimeoutError:
            log.warning("the end of run %s could not be committed on the run bus in time", run.run_id)

    # -- told by the bus -------------------------------------------------------------------------
    def lost(self, run_id: str, status: dict[str, Any]) -> None:
        """The bus says another instance ended ``run_id``: stop it here (its end is adopted when
        it settles), so its session is not held for a run its client was told had failed."""
        run = self.runs.runs.get(run_id)
        if run is None or run.terminal or run.ending:
            return  # an end under way gets the bus's answer (the ending elsewhere) itself
        run.ended_elsewhere = True
        self.runs.state.kernel.spawn(self._stop(run), name=f"hermes-api-lost-{run_id}")

    async def _stop(self, run: Run) -> None:
        session, turn = run.session, run.turn
        if session is not None and turn is not None:
            if turn.outcome.done():
                return  # the run is about to settle: the bus answers with the ending elsewhere
            if turn.position == 0:
                await session.interrupt(reason="system")  # the running turn is this run's
                return
            session.cancel_queued(turn.item_id)
        if run.task is not None and not run.task.done():
            run.task.cancel()  # queued or not started: the task's end settles it (adopted)

    async def ended_elsewhere(self, run_ids: list[str]) -> dict[str, dict[str, Any]]:
        """Of these runs of this instance, return the final status of those the durable records
        say ended elsewhere (asked before announcing them again after the bus lost its records)."""
        found: dict[str, dict[str, Any]] = {}
        store = self.runs.state.store
        for run_id in run_ids:
            stored = await store.get_run(run_id)
            run = self.runs.runs.get(run_id)
            ours = run is not None and run.terminal
            if stored is not None and stored[1].get("status") in TERMINAL and not ours:
                found[run_id] = stored[1]
        return found
