"""Finding a run wherever it lives — this process, the durable records, another instance on the
bus — and settling the runs whose owner is gone (docs/reference/api-server.md#run-bus,
#shutdown-and-restart).

A run whose owning instance died ends one way everywhere: ``run.failed`` with ``error_code``
``owner_lost``. The bus's reaper appends that event to the run's stream; :meth:`RunLookup.settle_lost`
copies the same status, terminal event included, into the durable record, so ``GET /v1/runs/{id}``,
``GET /v1/runs`` and the event stream tell the same story on every instance, also one started
after the owner died.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any, cast

from hermes_api_server.bus import RemoteRun, from_bus, to_bus
from hermes_api_server.errors import ApiError
from hermes_api_server.journal import Journal
from hermes_api_server.run_event_models import RunEndFields
from hermes_api_server.run_state import PRIVATE_KEYS, TERMINAL

if TYPE_CHECKING:
    from collections.abc import Mapping

    from hermes_api_server.run_state import Run
    from hermes_api_server.runs import RunManager
    from hermes_core import BusRun

log = logging.getLogger("hermes.api.runs")
LOST_MESSAGE = "The instance that owned this run stopped answering; the run ended."


def bus_unavailable(exc: Exception) -> ApiError:
    """Return the 503 of a run bus that cannot be reached."""
    log.warning("run bus unavailable: %s", exc)
    return ApiError(
        503,
        "bus_unavailable",
        "The run bus (Redis) cannot be reached; try again",
        headers={"Retry-After": "1"},
    )


def not_found(run_id: str) -> ApiError:
    """Return the 404 of an unknown, expired or foreign run."""
    return ApiError(404, "run_not_found", f"Run not found: {run_id}", param="run_id")


def settled(status: dict[str, Any]) -> bool:
    """Tell whether a stored status is a terminal one."""
    return status.get("status") in TERMINAL


class RunLookup:
    """The run manager's view of runs beyond this process."""

    def __init__(self, runs: RunManager) -> None:
        self.runs = runs

    async def find(self, who: str, run_id: str) -> Run | RemoteRun | dict[str, Any]:
        """Return the live run, else its stored status, else (on a shared bus) the run another
        instance owns; 404 for unknown or foreign runs. A run whose owner is gone for sure is
        settled (``owner_lost``) on the way."""
        runs = self.runs
        run = runs.runs.get(run_id)
        if run is not None:
            if run.principal != who:
                raise not_found(run_id)
            return run
        store = runs.state.store
        stored = await store.get_run(run_id)
        if stored is not None:
            if stored[0] != who:
                raise not_found(run_id)
            if not store.shared:
                return stored[1]
            # A shared record: the run's owner on the bus still serves its events and commands.
        try:
            record = await runs.bus.lookup(run_id)
        except Exception as exc:
            if stored is not None:
                return stored[1]
            raise bus_unavailable(exc) from None
        if record is None or record["principal"] != who or record["owner"] == runs.bus.instance_id:
            if stored is None:
                raise not_found(run_id)
            if record is None and not settled(stored[1]):
                return await self.settle_unknown(run_id, who, stored[1])
            return stored[1]
        status = from_bus(record["status"])
        if store.shared and (stored is None or not settled(stored[1])):
            status = await self._settle_from(record, run_id, who, status)
        return RemoteRun(run_id, record["owner"], record["alive"], record["session_id"], status)

    async def settle_if_gone(self, run_id: str, who: str, status: dict[str, Any]) -> dict[str, Any]:
        """Return the run's status, settled first when the bus says it ended or its owner is gone
        for sure; an unreachable bus leaves it as it is."""
        try:
            record = await self.runs.bus.lookup(run_id)
        except Exception:
            log.warning("cannot ask the run bus about run %s; leaving it as it is", run_id, exc_info=True)
            return status
        if record is None:
            return await self.settle_unknown(run_id, who, status)
        return await self._settle_from(record, run_id, who, status)

    async def _settle_from(
        self, record: BusRun, run_id: str, who: str, status: dict[str, Any]
    ) -> dict[str, Any]:
        """Copy an end the bus holds into the durable record; end a run whose owner is gone for
        sure (the bus decides: a live owner, or a bus up too short to tell, is left alone)."""
        final = from_bus(record["status"])
        if not settled(final):
            if record["alive"]:
                return final
            try:
                if not await self.runs.bus.reap(run_id):
                    return final
                ended = await self.runs.bus.lookup(run_id)
            except Exception:
                log.warning("cannot settle run %s on the run bus", run_id, exc_info=True)
                return final
            if ended is None or not settled(from_bus(ended["status"])):
                return final
            final = from_bus(ended["status"])
        await self.runs.ends.store_end(run_id, who, final)
        return final

    async def settle_unknown(self, run_id: str, who: str, status: dict[str, Any]) -> dict[str, Any]:
        """End a run the bus knows nothing of (Redis lost it) whose owner did not announce it
        again: only when nothing was heard of it for the owner grace period, and only once the bus
        has been up that long (the bus decides); else return ``status`` unchanged."""
        grace = self.runs.state.kernel.settings.bus.owner_grace_s
        if time.time() - float(status.get("updated_at") or 0) < grace:
            return status
        try:
            if not await self.runs.bus.reap(run_id, who, to_bus(status)):
                return status
            record = await self.runs.bus.lookup(run_id)
        except Exception:
            log.warning("cannot settle run %s on the run bus", run_id, exc_info=True)
            return status
        final = from_bus(record["status"]) if record is not None else None
        if final is None or not settled(final):
            return status
        await self.runs.ends.store_end(run_id, who, final)
        return final

    async def shown_upto(self, run_id: str, last_seq: int, reserved: int, status: dict[str, Any]) -> int:
        """Return the last seq a gone owner can have shown of the run: at least ``last_seq`` (what
        the bus holds), at most ``reserved`` (what the owner had reserved on it).

        The owner shows an event only once the core events behind it are in the session's event
        log, and only while its liveness lease on the bus holds, which ended before the bus
        called it gone; so when the log gives the run's events in full, the last of them is the
        last the owner can have shown, and the end follows it with no gap
        (docs/reference/api-server.md#resume-after-a-restart). Else (logging off, a trimmed log,
        another database) nothing tells, and the end follows the reservation.
        """
        if reserved <= last_seq:
            return last_seq
        from hermes_api_server.run_log import replay

        stored = await self.runs.state.store.get_run(run_id)
        known = stored[1] if stored is not None and isinstance(stored[1].get("log"), dict) else status
        found = await replay(self.runs.state.kernel, self.runs.state.settings.show_reasoning, known)
        if not found.complete:
            return reserved
        return min(reserved, max(last_seq, len(found.payloads)))

    async def stored_end(self, run_id: str) -> dict[str, Any] | None:
        """Return the terminal event of a run settled in the durable records, else None."""
        stored = await self.runs.state.store.get_run(run_id)
        if stored is None or not settled(stored[1]):
            return None
        end: dict[str, Any] | None = stored[1].get("terminal_event")
        return end

    async def recent(self, who: str, limit: int = 50) -> list[dict[str, Any]]:
        """Return the status objects of ``who``'s newest runs (live and stored), newest first."""
        runs = self.runs
        found: dict[str, dict[str, Any]] = {}
        for status in await runs.state.store.runs_of(who, limit):
            run_id = str(status.get("run_id"))
            if runs.state.store.shared and not settled(status) and run_id not in runs.runs:
                status = dict(await self.settle_if_gone(run_id, who, status))
            for key in PRIVATE_KEYS:
                status.pop(key, None)
            found[run_id] = status
        for run in runs.runs.values():
            if run.principal == who:
                found[run.run_id] = run.status_object()
        ordered = sorted(found.values(), key=lambda s: float(s.get("created_at") or 0), reverse=True)
        return ordered[:limit]

    async def reconcile_after_restart(self) -> None:
        """Settle the runs a dead process left non-terminal: on this instance's own records as
        ``interrupted`` (the server restarted), on shared records as ``owner_lost`` once their
        owner is gone for sure (runs other instances are serving are left alone)."""
        store = self.runs.state.store
        in_process = not self.runs.bus.shared
        for run_id, who, status in await store.non_terminal_runs():
            if not store.shared:
                await self._interrupted(run_id, who, await self._from_log(status))
            elif in_process:
                # No bus to ask: a run this process does not serve has nobody left to serve it.
                status = await self._from_log(status)
                status.pop("done", None)
                final = _lost(run_id, status, self.runs.state.settings.run_journal_events)
                await self.runs.ends.store_end(run_id, who, final)
            else:
                await self.settle_if_gone(run_id, who, status)

    async def sweep(self) -> None:
        """Settle shared runs whose owner is gone and that nobody asked about since."""
        store = self.runs.state.store
        if not store.shared:
            return
        for run_id, who, status in await store.non_terminal_runs():
            if run_id not in self.runs.runs:
                await self.settle_if_gone(run_id, who, status)

    async def _from_log(self, status: dict[str, Any]) -> dict[str, Any]:
        """Return ``status`` brought up to what the session's event log holds of the run: the
        last seq its owner can have shown, its output, and ``done`` when the turn had ended
        (docs/reference/api-server.md#resume-after-a-restart)."""
        from hermes_api_server.run_log import replay

        state = self.runs.state
        found = await replay(state.kernel, state.settings.show_reasoning, status)
        status = dict(status)
        status["last_seq"] = max(int(status.get("last_seq") or 0), len(found.payloads))
        if found.complete:
            status["output"] = found.output
        if found.done is not None:
            status["done"] = found.done
        return status

    async def _interrupted(self, run_id: str, who: str, status: dict[str, Any]) -> None:
        from hermes_api_server.outcomes import run_terminal

        done = status.pop("done", None)
        state = "interrupted"
        fields = RunEndFields(
            error="The server stopped (killed, crashed or restarted) before this run settled.",
            output=status.get("output", ""),
            completed=False,
            partial=bool(status.get("output")),
            interrupted=True,
            turn_exit_reason="interrupted_by_system(shutdown)",
            pending_steer=None,
        )
        if done is not None and done.outcome.reason != "interrupted_by_system":
            # The turn had ended before the process did, but its run was not settled yet.
            state, fields = run_terminal(done, False)
            fields.setdefault("pending_steer", done.pending_steer)
        limit = self.runs.state.settings.run_journal_events
        clean = cast(dict[str, Any], self.runs.state.kernel.redactor.obj(fields))
        await self.runs.state.store.put_run(run_id, who, _ended(run_id, status, state, clean, limit), True)


def owner_lost_end(
    run_id: str, last_seq: int, status: dict[str, Any], journal_events: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Return the ``run.failed`` (``owner_lost``) event numbered ``last_seq + 1`` of a run whose
    owner is gone, and the final status it makes (an open approval goes with the run)."""
    final = _lost(run_id, {**status, "last_seq": last_seq}, journal_events)
    final.pop("approval", None)
    return final["terminal_event"], final


def _lost(run_id: str, status: dict[str, Any], journal_events: int) -> dict[str, Any]:
    """Return the ``owner_lost`` end of a run the bus holds nothing about."""
    fields = RunEndFields(
        error=LOST_MESSAGE,
        output=status.get("output", ""),
        usage=status.get("usage"),
        completed=False,
        partial=bool(status.get("output")),
        error_code="owner_lost",
        turn_exit_reason="error",
        pending_steer=None,
    )
    return _ended(run_id, status, "failed", fields, journal_events)


def _ended(
    run_id: str, status: dict[str, Any], state: str, fields: Mapping[str, Any], journal_events: int
) -> dict[str, Any]:
    """Return ``status`` ended as ``state`` by a terminal event carrying ``fields``."""
    last_seq = int(status.get("last_seq") or 0)
    journal = Journal(run_id, journal_events, last_seq + 1)
    payload = journal.append(f"run.{state}", fields, terminal=True)
    ended = dict(status)
    ended.update(fields)
    ended.update(
        status=state,
        updated_at=time.time(),
        last_event=f"run.{state}",
        last_seq=payload["seq"],
        terminal_event=payload,
    )
    return ended
