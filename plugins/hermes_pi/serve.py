"""Run ``hermes pi --mode rpc``: open the session the flags name, then answer commands until stdin
ends or a signal (docs/reference/pi.md#command-line, #shutdown).

Shutdown is orderly whatever starts it: a run still going is aborted (so it still ends with its
``agent_settled``), the session is closed and every queued record is written. Stdin EOF exits 0,
SIGHUP 129 and SIGTERM 143, as pi does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from typing import TYPE_CHECKING, Any

from hermes_core import HermesError, SessionInUse, SessionNotFound, rpc
from hermes_pi import commands_bash, commands_model, commands_run, commands_session, commands_state
from hermes_pi import early as early_step
from hermes_pi.channel import JsonlChannel
from hermes_pi.dispatch import Dispatcher, Handler, parse
from hermes_pi.host import Flags, PiHost
from hermes_pi.models import LEVEL_TO_EFFORT, cli_reference
from hermes_pi.wire import PI_VERSION, Command

if TYPE_CHECKING:
    from hermes_core import Session, TransportContext
    from hermes_pi.settings import PiSettings

log = logging.getLogger("hermes.pi")
SHUTDOWN_GRACE_S = 3.0
EXIT_HUP = 129
#: Every command of pi's RPC protocol and its handler.
HANDLERS: dict[str, Handler] = {
    "prompt": commands_run.prompt,
    "steer": commands_run.steer,
    "follow_up": commands_run.follow_up,
    "abort": commands_run.abort,
    "clear_queue": commands_run.clear_queue,
    "new_session": commands_session.new_session,
    "get_state": commands_state.get_state,
    "get_messages": commands_state.get_messages,
    "set_model": commands_model.set_model,
    "cycle_model": commands_model.cycle_model,
    "get_available_models": commands_model.get_available_models,
    "set_thinking_level": commands_model.set_thinking_level,
    "cycle_thinking_level": commands_model.cycle_thinking_level,
    "get_available_thinking_levels": commands_model.get_available_thinking_levels,
    "set_steering_mode": commands_model.set_steering_mode,
    "set_follow_up_mode": commands_model.set_follow_up_mode,
    "compact": commands_model.compact,
    "set_auto_compaction": commands_model.set_auto_compaction,
    "set_auto_retry": commands_model.set_auto_retry,
    "abort_retry": commands_model.abort_retry,
    "bash": commands_bash.bash,
    "abort_bash": commands_bash.abort_bash,
    "get_session_stats": commands_state.get_session_stats,
    "export_html": commands_session.export_html,
    "switch_session": commands_session.switch_session,
    "fork": commands_session.fork,
    "clone": commands_session.clone,
    "get_fork_messages": commands_session.get_fork_messages,
    "get_entries": commands_session.get_entries,
    "get_tree": commands_session.get_tree,
    "get_last_assistant_text": commands_state.get_last_assistant_text,
    "set_session_name": commands_state.set_session_name,
    "get_commands": commands_state.get_commands,
}


class StartError(Exception):
    """The session the flags ask for cannot be opened; the message goes to stderr."""


async def serve(ctx: TransportContext[PiSettings]) -> int:
    """Serve pi's RPC protocol on stdio; return the exit code."""
    options = ctx.options
    if options.get("version"):
        sys.stdout.write(PI_VERSION + "\n")
        sys.stdout.flush()
        return 0
    early = early_step.take()
    guard = early.guard if early is not None and early.guard is not None else rpc.protect_stdout("stderr")
    stop = asyncio.Event()
    hangup = _on_hangup(stop)
    channel = JsonlChannel(0, guard.frame_fd, stop.set, early.rest if early is not None else b"")
    try:
        await ctx.ready
    except Exception as exc:
        sys.stderr.write(f"hermes pi: cannot start: {exc}\n")
        await channel.close()
        return 1
    flags = Flags(
        no_session=bool(options.get("no-session")),
        session=options.get("session"),
        provider=options.get("provider"),
        model=options.get("model"),
        thinking=options.get("thinking"),
        name=options.get("name"),
    )
    host = PiHost(ctx.kernel, ctx.settings, channel, flags)
    try:
        host.attach(await open_start(host, flags, early.session_id if early is not None else None))
    except StartError as exc:
        sys.stderr.write(f"hermes pi: {exc}\n")
        await channel.close()
        return 1
    remembering = asyncio.create_task(_remember(host, early), name="pi-early-cache") if early else None
    dispatcher = Dispatcher(host, HANDLERS)
    handlers: set[asyncio.Task[None]] = set()
    reader = asyncio.create_task(_read(channel, dispatcher, handlers), name="pi-reader")
    stopper = asyncio.create_task(stop.wait(), name="pi-stop")
    try:
        await asyncio.wait([reader, stopper], return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopper.cancel()
        reader.cancel()
        if remembering is not None:
            await asyncio.wait([remembering], timeout=SHUTDOWN_GRACE_S)
        await _shutdown(host, channel, handlers)
    return EXIT_HUP if hangup.is_set() else 0


def _on_hangup(stop: asyncio.Event) -> asyncio.Event:
    """Make SIGHUP stop the server (exit 129); returns the event that records it came."""
    hangup = asyncio.Event()

    def on_signal() -> None:
        hangup.set()
        stop.set()

    with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
        asyncio.get_running_loop().add_signal_handler(signal.SIGHUP, on_signal)
    return hangup


async def _read(channel: JsonlChannel, dispatcher: Dispatcher, handlers: set[asyncio.Task[None]]) -> None:
    """Read lines until EOF; answer each command on its own task, in arrival order."""
    async for line in channel.lines():
        parsed = parse(line)
        if "error" in parsed:
            channel.send(dispatcher.parse_failure(str(parsed["error"])))
            continue
        raw: Any = parsed["ok"]
        if raw.get("type") == "extension_ui_response":
            dispatcher.host.dialogs.respond(raw)
            continue
        task = asyncio.create_task(_answer(channel, dispatcher, raw))
        handlers.add(task)
        task.add_done_callback(handlers.discard)


async def _answer(channel: JsonlChannel, dispatcher: Dispatcher, raw: dict[str, Any]) -> None:
    response = await dispatcher.run(raw)
    if isinstance(response, bytes):
        channel.send_frame(response)
    elif response is not None:
        channel.send(response)


async def _shutdown(host: PiHost, channel: JsonlChannel, handlers: set[asyncio.Task[None]]) -> None:
    """Abort the run, let answers in flight finish briefly, close the session, flush stdout."""
    try:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(host.abort(), SHUTDOWN_GRACE_S)
        if handlers:
            await asyncio.wait(list(handlers), timeout=1.0)
        for task in list(handlers):
            task.cancel()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(host.close(), SHUTDOWN_GRACE_S)
    finally:
        await channel.close(timeout=2.0)


async def _remember(host: PiHost, early: early_step.EarlyState) -> None:
    """Cache this start's ``get_state`` answer for the next early step (and say if it was stale).

    It runs beside the first commands (the first price lookup may load a table); an answer taken
    while one of them changed the session (its model, thinking level, name, or the session itself)
    is not stored.
    """

    def facts() -> tuple[object, ...]:
        session = host.session
        return session.id, session.info().model, session.info().reasoning_effort, session.info().title

    try:
        before = facts()
        data = await commands_state.get_state(host, Command({"type": "get_state"}))
        if facts() != before or data.get("sessionId") != early.session_id:
            return
        if await asyncio.to_thread(early_step.remember, early, data) and early.answered:
            log.warning("pi: the early get_state answer did not match the session; the cache is updated")
    except Exception:
        log.warning("pi: could not cache the early get_state answer", exc_info=True)


async def open_start(host: PiHost, flags: Flags, session_id: str | None = None) -> Session:
    """Open the session the command line asks for, with its model, thinking level and name.

    :param session_id: the id of a new session (the one the early step already answered with).

    :raises StartError: an unknown session, a session in use, an unknown model.
    """
    try:
        ref, level = cli_reference(flags.provider, flags.model, host.kernel.providers.names())
    except ValueError as exc:
        raise StartError(str(exc)) from None
    thinking = flags.thinking or level
    try:
        if flags.session and not flags.no_session:
            try:
                session = await commands_session.resolve(host, flags.session)
            except SessionNotFound:
                raise StartError(f"No session found matching '{flags.session}'") from None
            if ref:
                await session.switch_model(ref, scope="session")
            if flags.name:
                await session.set_title(flags.name)
        else:
            session = await host.open_session(session_id, model=ref, title=flags.name)
        if thinking:
            await session.set_reasoning_effort(LEVEL_TO_EFFORT[thinking])
    except SessionInUse:
        raise StartError(f"session {flags.session} is open in another Hermes process") from None
    except HermesError as exc:
        raise StartError(str(exc)) from None
    return session
