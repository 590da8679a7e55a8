"""A run's core events relayed as run events: deltas, tool progress and diffs,
approvals, steer, sub-agents, the end of the turn (docs/reference/api-server.md#run-events)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hermes_api_server.run_log import RunProjection, event_time
from hermes_api_server.turns import EventPump, stored_first
from hermes_core import QuestionClosed, QuestionRequested, TurnCompleted, TurnStarted

if TYPE_CHECKING:
    from collections.abc import Mapping

    from hermes_api_server.run_state import Run
    from hermes_api_server.runs import RunManager
    from hermes_core import AnyEvent, Turn


class RunEvents:
    """Relays one run's turn to its journal and status through the run manager.

    Every core event of the turn is projected on its own (:class:`RunProjection`, the same
    projection a read from the event log uses), and a batch's run events are shown only once
    the core events behind them are stored in the session's log, the run's terminal event
    only once the turn's end is, so the run's numbering can be rebuilt from the log after a
    restart (docs/reference/api-server.md#resume-after-a-restart).
    """

    def __init__(self, runs: RunManager) -> None:
        self.runs = runs

    async def pump(self, run: Run, turn: Turn) -> None:
        """Relay the turn's events as run events until it completes."""
        state = self.runs.state
        pump = EventPump(turn)
        cwd = run.session.cwd if run.session is not None else None
        projection = RunProjection(state.kernel.redactor, state.settings.show_reasoning, cwd)
        turn_id: str | None = None
        try:
            async for batch in pump.batches(keepalive_s=3600):
                if batch is None:
                    continue
                mine = []
                shown: list[tuple[str, Mapping[str, Any]] | None] = []
                for event in batch:
                    if isinstance(event, TurnStarted) and turn_id is None:
                        turn_id = event.turn_id
                    if turn_id is not None and event.turn_id != turn_id:
                        continue
                    mine.append(event)
                    shown.append(projection.feed(event))
                ends = any(isinstance(event, TurnCompleted) for event in mine)
                if run.session is not None and (ends or any(shown)):
                    # The run's terminal event too: shown before the turn's end is stored, a
                    # ``kill -9`` would have the restart end the run under the same seq as
                    # ``interrupted`` while its client saw it complete.
                    await stored_first(state.kernel, run.session.id, mine)
                async with run.showing:
                    for event, projected in zip(mine, shown, strict=True):
                        if isinstance(event, QuestionRequested):
                            await self._on_event(run, event)  # the status says so before the event
                        if projected is not None:
                            name, fields = projected
                            if name == "message.delta":
                                run.output += fields["delta"]
                            self.runs.emit(run, name, fields, event_time(event))
                        if not isinstance(event, QuestionRequested):
                            await self._on_event(run, event)
        finally:
            await pump.close()

    async def _on_event(self, run: Run, event: AnyEvent) -> None:
        """Keep the run's status in step with its turn (the events were relayed already)."""
        match event:
            case TurnStarted():
                if run.status == "queued":
                    await self.runs.set_status(run, "running")
            case QuestionRequested(kind="approval"):
                run.approvals[event.request_id] = event
                if run.status == "running":
                    await self.runs.set_status(run, "waiting_for_approval")
            case QuestionClosed(kind="approval"):
                if run.approvals.pop(event.request_id, None) is None:
                    return
                if not run.approvals and run.status == "waiting_for_approval":
                    await self.runs.set_status(run, "running")
            case TurnCompleted():
                await self.runs.finish(run, event)
