"""Runs: lifecycle, durable status and stop (docs/reference/api-server.md#runs).

The relay of a run's turn events is :mod:`hermes_api_server.runs_events`; how a run ends, once,
is :mod:`hermes_api_server.runs_end`; finding runs beyond this process (records, other instances)
and settling a dead owner's runs is :mod:`hermes_api_server.runs_lookup`; steer and approvals are
:mod:`hermes_api_server.runs_control`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_api_server.bus import LocalBus, RemoteRun, end_for_bus, from_bus, to_bus
from hermes_api_server.errors import ApiError
from hermes_api_server.idempotency import TTL_S, InFlight
from hermes_api_server.journal import Journal
from hermes_api_server.outcomes import usage_dict
from hermes_api_server.run_event_models import RunStartedFields, RunUsage
from hermes_api_server.run_log import anchor
from hermes_api_server.run_state import Run
from hermes_api_server.runs_end import RunEnds
from hermes_api_server.runs_events import RunEvents
from hermes_api_server.runs_lookup import RunLookup, owner_lost_end
from hermes_api_server.trace_context import caller_trace
from hermes_api_server.turns import submit_turn
from hermes_core import EventLogStopped, TurnCompleted, valid_traceparent

if TYPE_CHECKING:
    from hermes_api_server.convert import Conversation
    from hermes_api_server.model_select import ModelChoice
    from hermes_api_server.response_target import Target
    from hermes_api_server.state import ServerState
    from hermes_core import OwnerGone, RunBus, RunEnd, RunStatus

log = logging.getLogger("hermes.api.runs")
SWEEP_S = 60.0
STATUS_FLUSH_S = 1.0
CLAIM_WAIT_S = 1.0


class RunManager:
    """Every run of this process, plus their durable statuses in the plugin's records."""

    def __init__(self, state: ServerState) -> None:
        self.state = state
        self.runs: dict[str, Run] = {}
        #: ``POST /v1/runs`` creations under way, by (principal, Idempotency-Key).
        self.in_flight = InFlight()
        self._sweeper: asyncio.Task[None] | None = None
        self._stored = 0
        #: Where events and control travel besides this process (docs/reference/api-server.md#run-bus).
        self.bus: RunBus = LocalBus(self)
        #: Readers here of runs other instances own, by run id.
        self.remote_subscribers: dict[str, int] = {}
        self.lookup = RunLookup(self)
        self.ends = RunEnds(self)

    # -- counters ------------------------------------------------------------------------------
    def non_terminal_count(self) -> int:
        return sum(1 for run in self.runs.values() if not run.terminal)

    def count(self, status: str) -> int:
        return sum(1 for run in self.runs.values() if run.status == status)

    def stored_count(self) -> int:
        return max(self._stored, len(self.runs))

    def subscriber_count(self) -> int:
        return sum(run.journal.subscribers for run in self.runs.values()) + sum(
            self.remote_subscribers.values()
        )

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> None:
        """Start the retention sweep."""
        self._sweeper = asyncio.create_task(self._sweep_loop(), name="hermes-api-sweep")

    async def close(self) -> None:
        """Stop the sweep and wait for run tasks."""
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
        tasks = [run.task for run in self.runs.values() if run.task is not None and not run.task.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self.bus.close()

    async def _sweep_loop(self) -> None:
        while True:
            await asyncio.sleep(SWEEP_S)
            try:
                await self.sweep()
            except Exception:
                log.warning("run sweep failed", exc_info=True)

    async def sweep(self) -> None:
        """Expire journals and statuses past their retention."""
        settings = self.state.settings
        now = time.monotonic()
        for run_id, run in list(self.runs.items()):
            closed = run.journal.closed_at
            if closed is None:
                continue
            if now - closed > settings.run_status_retention_s:
                del self.runs[run_id]
            elif now - closed > settings.run_journal_retention_s:
                run.journal.events.clear()
        await self.state.store.sweep(settings.run_status_retention_s, TTL_S)
        await self.state.chat_index.sweep()
        await self.lookup.sweep()
        self._stored = await self.state.store.count_runs()

    async def reconcile_after_restart(self) -> None:
        """Settle the runs a dead process left unfinished (see :class:`RunLookup`)."""
        await self.lookup.reconcile_after_restart()

    async def find(self, who: str, run_id: str) -> Run | RemoteRun | dict[str, Any]:
        """Return the run here, on another instance, or its stored status (see :class:`RunLookup`)."""
        return await self.lookup.find(who, run_id)

    async def recent(self, who: str, limit: int = 50) -> list[dict[str, Any]]:
        """Return ``who``'s newest runs, newest first (see :class:`RunLookup`)."""
        return await self.lookup.recent(who, limit)

    # -- events --------------------------------------------------------------------------------
    def emit(
        self, run: Run, event: str, fields: Mapping[str, Any], ts: float | None = None
    ) -> dict[str, Any] | None:
        """Append a run event and refresh the status stamp; None once the run's end is under way
        (nothing comes after it). The run's bus says how far readers may have the events
        (:meth:`shown`)."""
        if run.ending or run.terminal:
            return None
        payload = run.journal.append(event, fields, ts)
        self.bus.publish(run.run_id, payload["seq"], run.journal.last_data, False)
        run.last_event = event
        run.updated_at = payload["timestamp"]
        if time.monotonic() - run.flushed_at >= STATUS_FLUSH_S:
            self._flush_soon(run)
        return payload

    # -- what the bus tells the owner of runs (hermes_core.RunOwner) ------------------------------
    def shown(self, run_id: str, upto: int) -> None:
        """Let this process's readers have the run's events up to seq ``upto``."""
        run = self.runs.get(run_id)
        if run is not None:
            run.journal.show(upto)

    def hold(self, run_id: str, upto: int) -> None:
        """Show this process's readers nothing of the run past seq ``upto`` for now."""
        run = self.runs.get(run_id)
        if run is not None:
            run.journal.hold(upto)

    def release(self, run_id: str) -> None:
        """End a :meth:`hold`."""
        run = self.runs.get(run_id)
        if run is not None:
            run.journal.release()

    def lost(self, run_id: str, status: RunStatus) -> None:
        """Another instance ended the run: stop it here (see :class:`RunEnds`)."""
        self.ends.lost(run_id, from_bus(status))

    async def owner_gone(self, gone: OwnerGone, bus_status: RunStatus) -> RunEnd:
        """A run's owner is gone ("owner gone, last seq N"): its end is ``run.failed``
        (``owner_lost``), written here, numbered right after the last event the owner can have
        shown (see :meth:`RunLookup.shown_upto`)."""
        run_id = gone.run_id
        status = from_bus(bus_status)
        upto = await self.lookup.shown_upto(run_id, gone.last_seq, max(gone.last_seq, gone.reserved), status)
        return end_for_bus(*owner_lost_end(run_id, upto, status, self.state.settings.run_journal_events))

    def reaped(self, run_id: str, principal: str, status: RunStatus) -> None:
        """This instance ended another instance's run on the bus: store that end durably now, so
        that it outlives a Redis that forgets it before the fenced owner hears of it."""
        self.state.kernel.spawn(
            self.ends.store_end(run_id, principal, from_bus(status)), name=f"hermes-api-reaped-{run_id}"
        )

    async def ended_elsewhere(self, run_ids: list[str]) -> dict[str, RunStatus]:
        """Of these runs, those the durable records say ended elsewhere (see :class:`RunEnds`)."""
        found = await self.ends.ended_elsewhere(run_ids)
        return {run_id: to_bus(status) for run_id, status in found.items()}

    def _flush_soon(self, run: Run) -> None:
        run.flushed_at = time.monotonic()
        self.state.kernel.spawn(self.persist(run), name=f"hermes-api-run-{run.run_id}")

    async def persist(self, run: Run) -> None:
        """Write the run's status durably."""
        status = run.status_object()
        if run.journal.terminal_payload is not None:
            status["terminal_event"] = run.journal.terminal_payload
        if run.log_anchor is not None:
            status["log"] = run.log_anchor
        self.bus.update(run.run_id, to_bus(status), run.terminal)
        try:
            await self.state.store.put_run(run.run_id, run.principal, status, run.terminal)
        except Exception:
            log.warning("writing run %s failed", run.run_id, exc_info=True)

    async def set_status(self, run: Run, status: str) -> None:
        """Change and persist the status (not any more once the run's end is under way)."""
        if run.status != status and not run.ending and not run.terminal:
            run.status = status
            run.updated_at = time.time()
            await self.persist(run)

    # -- creation ------------------------------------------------------------------------------
    async def create(
        self,
        who: str,
        target: Target,
        conv: Conversation,
        choice: ModelChoice,
        metadata: dict[str, str],
        channel: str | None,
        workspace: Path | None,
        instructions: str | None,
    ) -> Run:
        """Register a run (before the 202) and start its task.

        :raises ApiError: 429 ``budget_exceeded`` when a budget refuses the run.
        """
        from hermes_api_server.budget_gate import admit

        admission = await admit(self.state.kernel, who, target.session_id)
        run_id = "run_" + secrets.token_hex(16)
        run = Run(
            run_id=run_id,
            principal=who,
            session_id=target.session_id,
            model=choice.requested_raw or choice.requested,
            resolved_model=choice.ref or self.state.kernel.default_model,
            metadata=metadata,
            journal=Journal(run_id, self.state.settings.run_journal_events),
            traceparent=valid_traceparent(caller_trace()),
            admission=admission,
        )
        self.runs[run_id] = run
        self.bus.claim(run_id, who, run.session_id, to_bus(run.status_object()))
        await self.persist(run)
        # Other instances must know the run before the client hears of it (its next request may
        # land on any of them); with the bus away the run still starts here, and the record follows.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.bus.flush(), CLAIM_WAIT_S)
        run.task = asyncio.create_task(
            self._execute(run, target, conv, choice, channel, workspace, instructions),
            name=f"hermes-run-{run_id}",
        )
        return run

    async def _execute(
        self,
        run: Run,
        target: Target,
        conv: Conversation,
        choice: ModelChoice,
        channel: str | None,
        workspace: Path | None,
        instructions: str | None,
    ) -> None:
        from hermes_api_server.response_target import open_target

        try:
            async with open_target(self.state, run.principal, target, channel, workspace) as session:
                run.session = session
                run.session_id = session.id
                system = "\n".join(s for s in (instructions or target.instructions, conv.system) if s)
                if system and system != session.record.system_overlay:
                    await session.set_system_overlay(system)
                model_ref, _ = choice.resolved_for(session)
                run.resolved_model = model_ref
                self.emit(
                    run,
                    "run.started",
                    RunStartedFields(session_id=session.id, model=run.model, resolved_model=model_ref),
                    run.created_at,
                )
                if run.stop_requested:
                    await self.ends.cancelled(run)
                    return
                after = self.state.kernel.events.head(session.id)
                admission, run.admission = run.admission, None  # the turn releases it now
                turn = await submit_turn(
                    session, conv, choice, run.principal, frozenset({"approval"}), admission=admission
                )
                run.turn = turn
                run.log_anchor = anchor(after, turn.item_id, session.cwd)
                await self.set_status(run, "queued" if turn.position > 0 else "running")
                await RunEvents(self).pump(run, turn)
        except ApiError as err:
            await self.ends.failed(run, err.message, err.code)
        except EventLogStopped as exc:
            # The log stopped below events the run had yet to show: they are not shown (their
            # numbers may name others later); the run ends at what was stored.
            log.warning("run %s: %s", run.run_id, exc)
            await self.ends.failed(run, self.state.kernel.redactor(str(exc)), "storage_error")
        except asyncio.CancelledError:
            if not run.terminal:
                await self.ends.interrupted_soon(run)
            raise
        except Exception as exc:
            log.warning("run %s crashed", run.run_id, exc_info=True)
            message = self.state.kernel.redactor(str(exc)) or type(exc).__name__
            await self.ends.failed(run, message, "agent_error")
        finally:
            if run.admission is not None:  # ended before its turn was submitted
                admission, run.admission = run.admission, None
                await asyncio.shield(self.state.kernel.budgets.release(admission))
            if run.turn is not None and run.session is not None and not run.turn.outcome.done():
                from hermes_api_server.turns import abandon

                await asyncio.shield(abandon(run.session, run.turn))
            run.session = None

    # -- settling (see RunEnds) -----------------------------------------------------------------
    async def finish(self, run: Run, done: TurnCompleted) -> None:
        """Settle the run as its turn ended."""
        await self.ends.finish(run, done)

    async def interrupt_all(self) -> None:
        """Interrupt every unsettled run (shutdown after the grace window)."""
        for run in list(self.runs.values()):
            if run.terminal:
                continue
            session, turn = run.session, run.turn
            if session is not None and turn is not None and not turn.outcome.done():
                if turn.position > 0:
                    session.cancel_queued(turn.item_id)
                else:
                    await session.interrupt(reason="system")
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline and any(not r.terminal for r in self.runs.values()):
            await asyncio.sleep(0.05)
        for run in list(self.runs.values()):
            if not run.terminal:
                if run.task is not None:
                    run.task.cancel()
                await self.ends.interrupted_soon(run)

    # -- operations ----------------------------------------------------------------------------
    async def stop(self, run: Run) -> dict[str, Any]:
        """Apply ``POST …/stop`` (docs/reference/api-server.md#stop-a-run)."""
        if run.terminal:
            return run.status_object()
        if run.status == "stopping" or run.ending:
            return {"run_id": run.run_id, "status": "stopping"}
        session, turn = run.session, run.turn
        if turn is None or session is None or (turn.position > 0):
            run.stop_requested = True
            if turn is not None and session is not None:
                session.cancel_queued(turn.item_id)
            if run.task is None:
                raise ApiError(409, "run_not_active", f"Run has no live task: {run.run_id}")
            await self.ends.cancelled(run)
            if run.task is not None:
                run.task.cancel()
            return {"run_id": run.run_id, "status": "cancelled"}
        run.stop_requested = True
        async with run.showing:
            if run.terminal:
                return run.status_object()
            if run.status == "stopping" or run.ending:
                return {"run_id": run.run_id, "status": "stopping"}
            run.status = "stopping"
            await self.add_recorded(run, "stopping")
        self.state.kernel.spawn(session.interrupt(reason="user", discard_queue=False), name="hermes-api-stop")
        return {"run_id": run.run_id, "status": "stopping"}

    async def add_recorded(self, run: Run, key: str) -> None:
        """Show an event the server adds to a run (:data:`run_log.ADDED`, by its ``key``) once
        the record that places its seq is written, so a read from the event log after a restart
        numbers it the same. The caller holds ``run.showing``: nothing else is numbered
        meanwhile."""
        from hermes_api_server.run_log import ADDED

        name, fields = ADDED[key]
        now = time.time()
        if run.log_anchor is not None:
            run.log_anchor.setdefault(key, []).append([run.journal.next_seq, now])
        run.updated_at = now
        await self.persist(run)
        self.emit(run, name, fields, now)

    def usage_of(self, done: TurnCompleted) -> RunUsage:
        return usage_dict(done)
