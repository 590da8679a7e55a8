"""The state of one ``hermes pi`` process: its session, the run on it and pi's queues
(docs/reference/pi.md#sessions, #steer-follow-up-and-the-queue).

pi serves one session per process, so :class:`PiHost` holds exactly one live session at a time
and replaces it for ``new_session``, ``switch_session``, ``fork`` and ``clone``. A run still going
then is aborted first, so even a replaced run ends with its ``agent_settled``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_core import ImagePart, InvalidValue, Part, TextPart, TurnCompleted, TurnStarted, parts_text
from hermes_pi import compaction, locator
from hermes_pi.bash import BashRunner
from hermes_pi.dialogs import Dialogs
from hermes_pi.models import ModelCatalog
from hermes_pi.queue import Pending, PiQueue
from hermes_pi.runstream import RunStream
from hermes_pi.wire import BadCommand

if TYPE_CHECKING:
    from hermes_core import Kernel, Session
    from hermes_pi.channel import JsonlChannel
    from hermes_pi.settings import PiSettings

log = logging.getLogger("hermes.pi")
OWNER = "pi"
SOURCE = "pi"


@dataclass(frozen=True, slots=True)
class Flags:
    """The command-line options of ``hermes pi`` that are not settings."""

    no_session: bool = False
    session: str | None = None
    provider: str | None = None
    model: str | None = None
    thinking: str | None = None
    name: str | None = None


def merge_parts(groups: Sequence[Sequence[Part]]) -> list[Part]:
    """Join several messages into one: texts separated by a blank line, images kept in order."""
    texts = [t for g in groups if (t := parts_text(list(g)))]
    images = [p for g in groups for p in g if isinstance(p, ImagePart)]
    return [TextPart("\n\n".join(texts)), *images]


class PiHost:
    """One pi session and everything ``hermes pi`` keeps about it."""

    def __init__(self, kernel: Kernel, settings: PiSettings, channel: JsonlChannel, flags: Flags) -> None:
        self.kernel = kernel
        self.settings = settings
        self.channel = channel
        self.flags = flags
        self.answer = frozenset(settings.answer)
        self.dialogs = Dialogs(kernel)
        self.queue = PiQueue()
        self.bash = BashRunner()
        self.catalog = ModelCatalog(kernel)
        self.follow_up_mode = "one-at-a-time"
        self.compacting = False
        #: What set_auto_compaction / set_auto_retry turned off, to restore when turned on again.
        self.saved_threshold: float | None = None
        self.saved_retries: int | None = None
        data_dir = kernel.settings.data_dir
        default_dir = Path(data_dir) / "pi-sessions" if data_dir is not None else None
        self.session_dir: Path | None = None if flags.no_session else (settings.session_dir or default_dir)
        self._session: Session | None = None
        self._stream: RunStream | None = None

    # -- output -------------------------------------------------------------------------------
    def send(self, record: dict[str, Any]) -> None:
        """Write one record to the client."""
        self.channel.send(record)

    def send_frame(self, frame: bytes) -> None:
        """Write one encoded record to the client."""
        self.channel.send_frame(frame)

    def queue_changed(self) -> None:
        """Send ``queue_update`` when pi's queues look different from the last one sent."""
        record = self.queue.changed()
        if record is not None:
            self.send(record)

    # -- the session --------------------------------------------------------------------------
    @property
    def session(self) -> Session:
        assert self._session is not None, "no session yet"
        return self._session

    @property
    def stream(self) -> RunStream:
        assert self._stream is not None, "no session yet"
        return self._stream

    @property
    def session_file(self) -> str | None:
        """pi's ``sessionFile`` for the current session (None with ``--no-session``)."""
        return locator.session_file(self.session_dir, self.session.id)

    def attach(self, session: Session) -> None:
        """Make ``session`` the current one and start encoding its events."""
        self._session = session
        self._stream = RunStream(
            session,
            self.send,
            self.send_frame,
            self,
            self.dialogs,
            self.answer,
            lambda: self.kernel.settings.agent.provider_retries,
        )

    async def replace(self, session: Session) -> None:
        """Switch to another session: end the run on the old one, attach the new one, close the old.

        The swap itself does not wait, so a command read meanwhile acts on one session or the
        other, never on a half-closed one; the old stream and session are closed afterwards.
        """
        while self._session is not session and self._stream is not None and self._stream.active:
            await self.abort()
        old, old_stream = self._session, self._stream
        if old is session:
            return
        self.dialogs.forget_all()
        self.queue.reset()
        self.bash.pending.clear()
        self.attach(session)
        if old_stream is not None:
            await old_stream.close()
        if old is not None:
            await old.close()

    async def open_session(self, session_id: str | None = None, **options: Any) -> Session:
        """Open (or create) a session the way pi's commands do: this transport's source and owner."""
        options.setdefault("cwd", self._session.cwd if self._session is not None else Path.cwd())
        options.setdefault("profile", self.settings.approval_profile)
        return await self.kernel.open_session(session_id, source=SOURCE, owner=OWNER, **options)

    async def save_locator(self) -> None:
        """Write the current session's locator file once the session is stored."""
        path = self.session_file
        session = self._session
        if path is None or session is None or not session.persisted:
            return
        try:
            await asyncio.to_thread(
                locator.write_header, Path(path), session.id, str(session.cwd), session.record.created_at
            )
        except OSError as exc:
            log.warning("pi: cannot write the session file %s: %s", path, exc)

    # -- submitting ---------------------------------------------------------------------------
    async def submit(self, parts: Sequence[Part]) -> str:
        """Submit one user message (with the pending bash output in front); return its item id."""
        context, taken = self.bash.take_context()
        content = list(parts)
        if context:
            content = merge_parts([[TextPart(context)], content])
        try:
            turn = await self.session.submit(content, owner=OWNER, answerable=self.answer, track_events=False)
        except BaseException:
            self.bash.give_back(taken)
            raise
        return turn.item_id

    async def start_run(self, parts: Sequence[Part]) -> None:
        """Start a run with a prompt; held steering joins it (held follow-ups run after it)."""
        stream = self.stream
        held, self.queue.held_steer = self.queue.held_steer, []
        stream.begin()
        try:
            await self.submit(merge_parts([parts, *(p.parts for p in held)]) if held else parts)
        except BaseException:
            stream.cancel_begin()
            self.queue.held_steer = held + self.queue.held_steer
            raise
        self.queue_changed()

    async def steer(self, parts: list[Part]) -> None:
        """Steer the running turn, or hold the text for the run's next turn (or the next run)."""
        session = self.session
        if session.run is not None and not any(isinstance(p, ImagePart) for p in parts):
            try:
                verdict = session.steer(parts_text(parts))
            except InvalidValue as exc:
                raise BadCommand(f"steer: {exc}") from None
            if verdict == "accepted":
                self.queue.accepted.append(parts_text(parts))
                self.queue_changed()
                return
        self.queue.held_steer.append(Pending(parts))
        self.queue_changed()
        if session.run is None:
            await self._next_now()

    async def follow_up(self, parts: list[Part]) -> None:
        """Hold a follow-up; it runs when the run's work is done (or after the next prompt)."""
        self.queue.held_follow.append(Pending(parts))
        self.queue_changed()
        if self.session.run is None:
            await self._next_now()

    async def _next_now(self) -> None:
        """Between two turns of an active run: submit what comes next at once."""
        stream = self.stream
        if not stream.active or self.session.busy:
            return
        stream.hold()
        try:
            await self._submit_next()
        finally:
            stream.release()

    async def _submit_next(self) -> bool:
        """Submit the run's next turn: held steering first, else the next follow-up(s)."""
        if self.stream.aborted:
            return False
        queue = self.queue
        steering = bool(queue.held_steer)
        if steering:
            chosen, queue.held_steer = queue.held_steer, []
        elif queue.held_follow:
            count = len(queue.held_follow) if self.follow_up_mode == "all" else 1
            chosen, queue.held_follow = queue.held_follow[:count], queue.held_follow[count:]
        else:
            return False
        try:
            await self.submit(merge_parts([p.parts for p in chosen]) if len(chosen) > 1 else chosen[0].parts)
        except BaseException:
            # Nothing is lost: the messages go back to the head of their queue.
            if steering:
                queue.held_steer[:0] = chosen
            else:
                queue.held_follow[:0] = chosen
            raise
        finally:
            self.queue_changed()
        return True

    async def abort(self) -> None:
        """Stop the run: interrupt the turn, keep what was queued, wait for ``agent_settled``."""
        stream = self.stream
        if not stream.active:
            return
        stream.aborted = True
        session = self.session
        withdrawn = session.withdraw_steer()
        self.queue.accepted.clear()
        self.queue.held_steer[:0] = [Pending([TextPart(t)]) for t in withdrawn]
        await session.interrupt(reason="user", discard_queue=True)
        self.queue_changed()
        await stream.settled()

    async def abort_retry(self) -> None:
        """Stop a turn that waits to retry a failed model call; it ends with that failure."""
        stream = self.stream
        if stream.retrying:
            stream.retry_cancelled = True
            await self.session.interrupt(reason="user")

    def clear_queue(self) -> dict[str, list[str]]:
        """Empty both queues and return what they held (pi's ``clear_queue``)."""
        self.session.withdraw_steer()
        snapshot = self.queue.snapshot()
        self.queue.reset()
        self.queue_changed()
        return snapshot

    # -- the stream's hooks (StreamHost) ------------------------------------------------------
    def turn_started(self, ev: TurnStarted) -> None:
        """A turn began (its message already left the queue)."""

    def steer_delivered(self) -> None:
        """Accepted steering reached the model at a tool boundary."""
        self.queue.accepted.clear()
        self.queue_changed()

    def turn_finished(self, ev: TurnCompleted) -> None:
        """Steering the turn could not deliver is held for the run's next turn."""
        self.queue.accepted.clear()
        if ev.pending_steer:
            self.queue.held_steer.insert(0, Pending([TextPart(ev.pending_steer)]))
        self.queue_changed()
        self.kernel.spawn(self.save_locator(), name="pi-locator")

    def before_settle(self) -> bool:
        """The session went idle: start the run's next turn if anything is queued (not after abort)."""
        if self.stream.aborted or not (self.queue.held_steer or self.queue.held_follow):
            return False
        self.stream.hold()
        self.kernel.spawn(self._next_logged(), name="pi-next")
        return True

    async def _next_logged(self) -> None:
        try:
            await self._submit_next()
        except Exception:
            log.exception("pi: could not run the next queued message")
        finally:
            self.stream.release()

    def compaction_seen(self) -> None:
        """The core compacted before a turn: report it as pi's threshold compaction."""
        if not self.compacting:
            compaction.automatic(self.session, self.send)

    # -- shutdown -----------------------------------------------------------------------------
    async def close(self) -> None:
        """End the run (answering nothing more), stop the stream and close the session."""
        self.bash.abort()
        if self._stream is not None:
            await self._stream.close()
        if self._session is not None:
            await self.save_locator()
            await self._session.close()
