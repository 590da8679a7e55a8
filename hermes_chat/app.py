"""The interactive chat: a prompt_toolkit application drawn below the terminal's scrollback.

Nothing here uses the alternate screen. Finished output is written above the application (it
is erased, the text written, and it is drawn again below it), so it stays in the terminal's
own scrollback, selectable and copyable. The application itself is a few lines: the live area
(the unfinished end of the reply, running tools and subagents), an open question, the input
and a toolbar with the model, the state and the token count.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

from prompt_toolkit.application import Application
from prompt_toolkit.buffer import Buffer
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.input import Input
from prompt_toolkit.layout import Layout
from prompt_toolkit.output import Output as PtOutput

from hermes_chat import trace
from hermes_chat.client import ChatClient
from hermes_chat.composer import ChatCompleter, Pastes, history_path
from hermes_chat.controller import LOCAL_COMMANDS, Controller, describe_error
from hermes_chat.layout import build_layout
from hermes_chat.link import Connector, LinkError
from hermes_chat.render import RichPainter
from hermes_chat.rpc import ConnectionLost, RpcError
from hermes_chat.screen import Question, Screen
from hermes_chat.terminal_output import STYLE, TerminalOutput


class ChatApp:
    """One interactive chat."""

    def __init__(
        self,
        connector: Connector,
        *,
        cwd: str,
        data_dir: Path | None,
        pt_input: Input | None = None,
        pt_output: PtOutput | None = None,
    ) -> None:
        self.out = TerminalOutput()
        self.painter = RichPainter(self.columns)
        self.client = ChatClient(connector, self, cwd=cwd)
        self.screen = Screen(self.painter, self.out, lambda: self.client.session_id, live=True)
        self.controller = Controller(self.client, self.screen)
        self.controller.prefill = self.prefill
        self.controller.exit = self.exit
        self.pastes = Pastes()
        self.cwd = Path(cwd)
        self.models: list[str] = []
        self.link_state = "starting the gateway…"
        self.session_open = False
        self.early: list[str] = []  # typed before the session existed
        self.last_interrupt = 0.0
        self.exit_code = 0
        self._supervisor: asyncio.Task[None] | None = None
        history: History = InMemoryHistory()
        if data_dir is not None:
            path = history_path(data_dir, self.cwd)
            with contextlib.suppress(OSError):
                path.parent.mkdir(parents=True, exist_ok=True)
                history = FileHistory(str(path))
        self.input_buffer = Buffer(
            multiline=True,
            history=history,
            completer=ChatCompleter(self.command_choices, self.argument_choices, self.cwd),
            complete_while_typing=True,
        )
        self.secret_buffer = Buffer(multiline=False)  # passwords and secrets: no history, hidden
        self.application: Application[Any] = Application(
            layout=self._layout(),
            key_bindings=self._bindings(),
            style=STYLE,
            full_screen=False,
            erase_when_done=True,
            mouse_support=False,
            # Redraws are throttled so a stream of events does not redraw per token; a key typed
            # meanwhile waits for the next slot, so the interval bounds the echo (bench_chat.py:
            # 40 ms gave p95 ~48 ms at load 12, 20 ms gives ~33 ms for 9% -> 13% of a core).
            min_redraw_interval=0.02,
            input=pt_input,
            output=pt_output,
        )
        self.out.app = self.application
        self.application.before_render += self._follow_width
        if trace.enabled():
            self.application.before_render += self._trace_render

    def _follow_width(self, app: Application[Any]) -> None:
        """Tell the gateway the terminal's new width (``terminal.resize``) when it changed."""
        columns = self.columns()
        client = self.client
        if columns == client.cols or not self.session_open or not client.session_id:
            return
        client.cols = columns
        self.controller.spawn(self._resize(client.session_id, columns))

    async def _resize(self, session_id: str, columns: int) -> None:
        with contextlib.suppress(RpcError, ConnectionLost):
            await self.client.call("terminal.resize", session_id=session_id, cols=columns)

    def _trace_render(self, app: Application[Any]) -> None:
        trace.note(
            f"render state={self.link_state!r} open={self.session_open} "
            f"cpr={app.renderer.cpr_support.name} in_terminal={app._running_in_terminal}"
        )

    # -- layout ------------------------------------------------------------------------------------

    def columns(self) -> int:
        try:
            return self.application.output.get_size().columns
        except Exception:
            return 80

    @property
    def question(self) -> Question | None:
        return self.screen.questions[0] if self.screen.questions else None

    def hidden_input(self) -> bool:
        question = self.question
        return question is not None and question.kind in ("sudo", "secret")

    def _layout(self) -> Layout:
        layout, self.input_window, self.secret_window = build_layout(self)
        return layout

    def _bindings(self) -> Any:
        from hermes_chat.keys import bindings

        return bindings(self)

    def sync_focus(self) -> None:
        """Focus the hidden field while a password or secret is asked for, else the input."""
        target = self.secret_window if self.hidden_input() else self.input_window
        layout = self.application.layout
        if not layout.has_focus(target):
            with contextlib.suppress(ValueError):
                layout.focus(target)

    # -- completion sources ------------------------------------------------------------------------

    def command_choices(self) -> list[tuple[str, str]]:
        return [*self.controller.catalog, *LOCAL_COMMANDS.items()]

    def argument_choices(self, command: str) -> list[str]:
        if command == "/model":
            return self.models
        return self.controller.sub.get(command, [])

    async def load_models(self) -> None:
        """Fetch ``provider:model`` names for ``/model`` completion (``model.options``)."""
        try:
            result = await self.client.call("model.options", session_id=self.client.session_id or "")
        except (RpcError, ConnectionLost):
            return
        names: list[str] = []
        for provider in result.get("providers") or []:
            slug = provider.get("slug") if isinstance(provider, dict) else None
            for model in provider.get("models") or [] if isinstance(provider, dict) else []:
                if slug and isinstance(model, str):
                    names.append(f"{slug}:{model}")
        self.models = names

    # -- the client's listener ---------------------------------------------------------------------

    def event(self, session_id: str, kind: str, payload: dict[str, Any], replayed: bool) -> None:
        self.screen.event(session_id, kind, payload, replayed)
        self.sync_focus()

    def connection(self, state: str, text: str) -> None:
        if state == "lost":
            self.screen.commit_tail()
            self.link_state = "gateway lost — reconnecting…"
            self.screen.notice(f"{text}; reconnecting", "warn")
        elif state == "retrying":
            self.link_state = f"gateway lost — {text}"
        elif state == "back":
            self.link_state = ""
            self.screen.notice(text, "ok")
            self.controller.spawn(self._after_reconnect())
        else:
            self.screen.notice(text)
        self.out.refresh()

    def rebuilt(self, snapshot: dict[str, Any]) -> None:
        self.screen.rebuilt(snapshot)
        self.sync_focus()

    async def _after_reconnect(self) -> None:
        await self.controller.send_waiting()

    # -- running -----------------------------------------------------------------------------------

    async def run(self, *, resume: str | None, continue_here: bool, model: str | None) -> int:
        """Run until the user leaves; return the exit code."""
        # One line first, so the application never starts on the screen's top row: erasing from
        # there reads as "clear the screen" to some terminals (tmux moves the lines to history).
        self.out.write(self.painter.notice("hermes chat · /help lists the commands · Ctrl+D leaves"))
        self.out.flush()
        self.client.cols = self.columns()  # what the gateway wraps slash command output to
        starter = asyncio.create_task(self._start(resume, continue_here, model))
        try:
            await self.application.run_async()
        finally:
            for task in (starter, self._supervisor):
                if task is not None and not task.done():
                    task.cancel()
                    with contextlib.suppress(BaseException):
                        await task
            await self.client.close()
            self.out.flush()
        return self.exit_code

    async def _start(self, resume: str | None, continue_here: bool, model: str | None) -> None:
        try:
            await self.client.connect()
            self.link_state = "opening the session…"
            self.out.refresh()
            snapshot = await self.client.open(resume=resume, continue_here=continue_here, model=model)
        except (LinkError, RpcError, ConnectionLost) as exc:
            text = describe_error(exc) if isinstance(exc, RpcError) else str(exc)
            self.fail(f"could not start the chat: {text}")
            return
        self.session_open, self.link_state = True, ""
        if trace.ON:
            trace.note(f"session open {self.client.session_id}")
        self.out.refresh()  # the toolbar changes now, whether or not an event follows
        if self.client.session_id and snapshot.get("messages"):
            self.screen.show_snapshot(snapshot)
            title = (snapshot.get("info") or {}).get("title")
            self.screen.notice(f"resumed {title or ''} ({self.client.session_id})".replace("  ", " "), "ok")
        else:
            self.screen.show_snapshot(snapshot)
        if model and (resume is not None or continue_here):
            await self.controller.command(f"/model {model}")
        self._supervisor = asyncio.create_task(self._supervise())
        # A prompt typed while the session opened goes out first and waits for nothing else: the
        # command and model lists only feed completion, and the gateway loads the module that
        # answers them on their first call. Tasks start in creation order, so it leads.
        early, self.early = self.early, []
        sending = asyncio.create_task(self._send_early(early))
        lists = asyncio.create_task(self._load_lists())
        await asyncio.gather(sending, lists)

    async def _send_early(self, texts: list[str]) -> None:
        for text in texts:
            await self.controller.prompt(text, echo=False)

    async def _load_lists(self) -> None:
        await self.controller.load_catalog()
        self._complete_again()
        await self.load_models()
        self._complete_again()

    def _complete_again(self) -> None:
        """Offer completions for a ``/`` typed before the command or model list arrived."""
        buffer = self.input_buffer
        if buffer.text.startswith("/") and buffer.complete_state is None:
            buffer.start_completion(select_first=False)

    async def _supervise(self) -> None:
        try:
            await self.client.supervise()
        except LinkError as exc:
            self.fail(str(exc))

    def fail(self, message: str) -> None:
        """Say what went wrong and leave with exit code 1."""
        self.screen.notice(message, "error")
        self.exit_code = 1
        self.exit()

    def exit(self) -> None:
        app = self.application
        if app.is_running and not app.is_done and not app.future.done():  # type: ignore[union-attr]
            app.exit()

    def prefill(self, text: str) -> None:
        self.input_buffer.text = text
        self.input_buffer.cursor_position = len(text)

    # -- input -------------------------------------------------------------------------------------

    def accept(self) -> None:
        """Enter in the input: answer a free-text question, or send a prompt or command."""
        buffer = self.input_buffer
        text = buffer.text
        question = self.question
        if question is not None and question.kind == "clarify":
            if text.strip():
                buffer.reset()
                self.controller.spawn(self.controller.answer(question, text.strip()))
            return
        if not text.strip():
            return
        full = self.pastes.expand(text)
        buffer.history.append_string(full)
        buffer.reset()
        self.last_interrupt = 0.0  # a Ctrl+C before this prompt does not count toward leaving
        if not self.session_open:
            self.screen.echo_user(text)
            self.early.append(full)
            return
        self.controller.spawn(self.controller.submit(full, shown=text))

    def accept_hidden(self, skip: bool = False) -> None:
        """Enter (or Esc to skip) in the hidden field: answer the password or secret question."""
        question = self.question
        value = "" if skip else self.secret_buffer.text
        self.secret_buffer.reset()
        if question is not None and question.kind in ("sudo", "secret"):
            self.controller.spawn(self.controller.answer(question, value))
        self.sync_focus()

    def paste(self, data: str) -> None:
        """A bracketed paste: an image path attaches the image, a big text collapses."""
        from hermes_chat.composer import image_path

        image = image_path(data, self.cwd) if self.session_open else None
        if image is not None:
            self.controller.spawn(self.controller.attach_image(str(image)))
            return
        self.input_buffer.insert_text(self.pastes.take(data))


async def run_app(
    connector: Connector, *, cwd: str, resume: str | None, continue_here: bool, model: str | None
) -> int:
    """Run the interactive chat in this terminal; return the exit code."""
    from hermes_chat.link import data_dir

    try:
        folder: Path | None = data_dir()
    except Exception:
        folder = None
    chat = ChatApp(connector, cwd=cwd, data_dir=folder)
    return await chat.run(resume=resume, continue_here=continue_here, model=model)
