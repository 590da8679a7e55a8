"""What the user asks for, turned into gateway calls: prompts, slash commands, answers, control.

Shared by the interactive app and the line-by-line mode. Slash commands go to the gateway's
``command.dispatch`` like on every other surface, and its directives are followed (``exec``
output shown, ``send`` submitted, ``prefill`` put in the input, ``alias`` dispatched, a
snapshot from ``/new``, ``/branch`` or ``/resume`` switched to). A few commands belong to this
client only: ``/expand``, ``/background``, ``/image``, ``/exit``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

from hermes_chat.client import ChatClient
from hermes_chat.rpc import ConnectionLost, RpcError
from hermes_chat.screen import Question, Screen

LOCAL_COMMANDS: dict[str, str] = {
    "/expand": "Show the whole output of tool call N (default: the last one)",
    "/background": "Run a prompt as a background task; its result is shown when it lands",
    "/image": "Attach an image file to the next prompt",
    "/exit": "Leave the chat (also /quit, Ctrl+D)",
    "/quit": "Leave the chat",
}
APPROVAL_KEYS = {"o": "once", "s": "session", "a": "always", "d": "deny"}
#: Commands that leave the current session for another. Typed while a turn runs, they wait for it
#: to end: the gateway would switch at once and the rest of the running turn would never be shown.
SWITCHING = frozenset({"/new", "/reset", "/resume", "/branch", "/fork"})


def describe_error(exc: RpcError) -> str:
    """Return an error response as one line, with the candidates a model error lists."""
    data = exc.data if isinstance(exc.data, dict) else {}
    text = exc.message or f"error {exc.code}"
    candidates = data.get("candidates")
    if isinstance(candidates, list) and candidates and "candidates" not in text.lower():
        text += " (did you mean: " + ", ".join(str(c) for c in candidates[:6]) + "?)"
    return text


class Controller:
    """Acts for the user on one chat."""

    def __init__(self, client: ChatClient, screen: Screen) -> None:
        self.client = client
        self.screen = screen
        self.catalog: list[tuple[str, str]] = []
        self.sub: dict[str, list[str]] = {}
        self.waiting: list[str] = []  # prompts typed while the gateway was away
        self.prefill: Callable[[str], None] | None = None
        self.exit: Callable[[], None] | None = None
        self.images: list[str] = []
        self._tasks: set[asyncio.Task[Any]] = set()
        # What the user enters runs in the order entered: a prompt typed right after /new (or
        # /branch, /resume) goes to the session the command switched to, not the one it left.
        self._in_order = asyncio.Lock()

    @property
    def session_id(self) -> str:
        return self.client.session_id or ""

    def working(self) -> bool:
        """Return whether something the user entered is still being carried out."""
        return bool(self._tasks)

    def spawn(self, work: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Run ``work`` in the background (a key press cannot wait); report a crash on screen."""
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            exc = task.exception()
            self.screen.notice(f"{type(exc).__name__}: {exc}", "error")

    async def load_catalog(self) -> None:
        """Fetch the command list for completion (``commands.catalog``)."""
        try:
            result = await self.client.call("commands.catalog", session_id=self.session_id)
        except (RpcError, ConnectionLost):
            return
        pairs = result.get("pairs") if isinstance(result, dict) else None
        if isinstance(pairs, list):
            self.catalog = [(str(p[0]), str(p[1])) for p in pairs if isinstance(p, list) and len(p) == 2]
        sub = result.get("sub") if isinstance(result, dict) else None
        if isinstance(sub, dict):
            self.sub = {str(k): [str(v) for v in vs] for k, vs in sub.items() if isinstance(vs, list)}

    async def submit(self, text: str, *, shown: str | None = None) -> None:
        """Handle one line (or block) the user entered.

        :param shown: what to echo instead of ``text`` (a big paste stays collapsed on screen).
        """
        stripped = text.strip()
        if not stripped:
            return
        async with self._in_order:
            if stripped.startswith("/") and not stripped.startswith("//"):
                self.screen.echo_user(stripped)
                await self.command(stripped)
            else:
                self.screen.echo_user(shown if shown is not None else text)
                await self.prompt(text[1:] if stripped.startswith("//") else text, echo=False)

    async def prompt(self, text: str, *, echo: bool = True) -> bool:
        """Send a prompt; return whether the gateway took it."""
        if echo:
            self.screen.echo_user(text)
        try:
            result = await self.client.call("prompt.submit", session_id=self.session_id, text=text)
        except ConnectionLost:
            self.waiting.append(text)
            self.screen.notice("not connected: the prompt is sent when the gateway is back", "warn")
            return False
        except RpcError as exc:
            self.screen.notice(describe_error(exc), "error")
            return False
        self.images.clear()
        status = result.get("status") if isinstance(result, dict) else None
        if status == "streaming":
            self.screen.expected_turns += 1
        if status == "queued":
            self.screen.notice(f"queued (position {result.get('position')}): it runs when this turn ends")
        elif status == "steered":
            self.screen.notice("sent into the running turn as guidance")
        return True

    async def send_waiting(self) -> None:
        """Send the prompts typed while the gateway was away, in order."""
        while self.waiting:
            text = self.waiting.pop(0)
            if not await self.prompt(text, echo=False):
                return

    async def command(self, line: str) -> None:
        """Run a slash command: this client's own, or the gateway's."""
        name, _, arg = line.partition(" ")
        arg = arg.strip()
        if name in ("/exit", "/quit"):
            if self.exit is not None:
                self.exit()
            return
        if name == "/expand":
            self.expand(arg)
            return
        if name == "/background":
            await self.background(arg)
            return
        if name == "/image":
            await self.attach_image(arg)
            return
        if name in SWITCHING and not self.settled():
            self.screen.notice(f"{name} runs when this turn ends (Ctrl+C stops the turn)")
            await self.wait_settled()
        try:
            result = await self.client.call("command.dispatch", session_id=self.session_id, command=line)
        except ConnectionLost:
            self.screen.notice("not connected to the gateway: try again when it is back", "warn")
            return
        except RpcError as exc:
            self.screen.notice(describe_error(exc), "error")
            return
        await self.directive(result if isinstance(result, dict) else {})
        if name == "/help" and not arg:
            lines = [f"  {cmd:<12} {text}" for cmd, text in LOCAL_COMMANDS.items()]
            self.screen.command_output("This chat also has:\n" + "\n".join(lines))

    async def directive(self, result: dict[str, Any], depth: int = 0) -> None:
        """Follow what ``command.dispatch`` answered."""
        kind = result.get("type")
        if kind == "exec":
            self.screen.command_output(str(result.get("output") or ""))
            if isinstance(result.get("session_id"), str) and "messages" in result:
                self.client.adopt(result)
                self.screen.show_snapshot(result, limit=20)
                await self.load_catalog()
        elif kind == "send":
            display = result.get("display")
            message = str(result.get("message") or "")
            if isinstance(display, str) and display:
                self.screen.notice(display)
            elif isinstance(display, dict) and display.get("retry"):  # /retry: {text, retry}
                self.screen.notice("sending your last prompt again")
            if message:
                await self.prompt(message)
        elif kind == "prefill":
            if self.prefill is not None:
                self.prefill(str(result.get("message") or ""))
        elif kind == "alias" and depth < 3:
            target = str(result.get("target") or "")
            if target:
                try:
                    follow = await self.client.call(
                        "command.dispatch", session_id=self.session_id, command=target
                    )
                except (RpcError, ConnectionLost) as exc:
                    self._failed(exc)
                    return
                await self.directive(follow if isinstance(follow, dict) else {}, depth + 1)

    def _failed(self, exc: RpcError | ConnectionLost) -> None:
        self.screen.notice(describe_error(exc) if isinstance(exc, RpcError) else str(exc), "error")

    def expand(self, arg: str) -> None:
        """Show a finished tool call's whole output (``/expand N``)."""
        number = int(arg) if arg.isdigit() else len(self.screen.tools)
        call = self.screen.tool(number)
        if call is None or not call.payload:
            self.screen.notice(f"no finished tool call {arg or ''}".rstrip(), "warn")
            return
        self.screen.out.write(self.screen.painter.tool(call.number, call.payload, expanded=True))

    async def background(self, text: str) -> None:
        """Start a background task (``prompt.background``)."""
        if not text:
            self.screen.notice("usage: /background PROMPT", "warn")
            return
        try:
            result = await self.client.call("prompt.background", session_id=self.session_id, text=text)
        except (RpcError, ConnectionLost) as exc:
            self._failed(exc)
            return
        self.screen.notice(f"background task {result.get('task_id')} started; its result appears here")

    async def attach_image(self, path: str) -> None:
        """Attach an image to the next prompt (``image.attach``)."""
        if not path:
            self.screen.notice("usage: /image PATH", "warn")
            return
        try:
            result = await self.client.call("image.attach", session_id=self.session_id, path=path)
        except (RpcError, ConnectionLost) as exc:
            self._failed(exc)
            return
        size = f" {result['width']}×{result['height']}" if result.get("width") else ""
        self.images.append(str(result.get("name", path)))
        self.screen.notice(f"attached {result.get('name', path)}{size}; it goes with your next prompt", "ok")

    async def interrupt(self) -> None:
        """Stop the running turn (``session.interrupt``)."""
        try:
            await self.client.call("session.interrupt", session_id=self.session_id)
        except (RpcError, ConnectionLost) as exc:
            self.screen.notice(f"could not interrupt: {exc}", "error")

    async def steer(self, text: str) -> None:
        """Give the running turn guidance; on an idle session, send it as a prompt."""
        try:
            result = await self.client.call("session.steer", session_id=self.session_id, text=text)
        except (RpcError, ConnectionLost) as exc:
            self.screen.notice(f"could not steer: {exc}", "error")
            return
        if result.get("status") == "queued":
            self.screen.notice(f"↪ steering: {text}")
        else:
            await self.prompt(text)

    async def answer(self, question: Question, value: str) -> None:
        """Answer a question; the record on screen never shows a password or secret."""
        params: dict[str, Any] = {"session_id": self.session_id, "request_id": question.request_id}
        if question.kind == "approval":
            method, params["choice"] = "approval.respond", value
            shown = "denied" if value == "deny" else f"approved ({value})"
            record = f"{shown}: {question.payload.get('command') or question.payload.get('description', '')}"
        elif question.kind == "clarify":
            method, params["answer"] = "clarify.respond", value
            record = f"answered: {value}"
        elif question.kind == "sudo":
            method, params["password"] = "sudo.respond", value
            record = "password given" if value else "password skipped"
        else:
            method, params["value"] = "secret.respond", value
            name = question.payload.get("env_var") or "secret"
            record = f"{name}: value given (hidden)" if value else f"{name}: skipped"
        self.screen.answered(question, record, "warn" if value in ("deny", "") else "ok")
        try:
            result = await self.client.call(method, **params)
        except (RpcError, ConnectionLost) as exc:
            self.screen.notice(f"the answer was not taken: {exc}", "error")
            return
        if isinstance(result, dict) and result.get("status") == "expired":
            self.screen.notice("that question had already expired", "warn")

    def settled(self) -> bool:
        """Return whether every prompt sent has finished and the session is idle."""
        screen = self.screen
        return screen.finished_turns >= screen.expected_turns and not screen.busy

    async def wait_settled(self) -> None:
        """Wait until every prompt sent so far has finished."""
        if self.settled():
            return
        changed = asyncio.Event()
        self.screen.watchers.append(changed.set)
        try:
            while not self.settled():
                await changed.wait()
                changed.clear()
        finally:
            self.screen.watchers.remove(changed.set)
