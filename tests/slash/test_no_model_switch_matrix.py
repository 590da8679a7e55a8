"""With ``HERMES_DISABLE_PLUGINS=model-switch``, every transport works except ``/model`` itself.

One module, parametrized over the TUI gateway, ACP and the API server, each a real subprocess
with every other first-party plugin installed and loaded. Each surface runs turns, switches the
model its own way (TUI ``config.set``, ACP ``set_config_option``, the API's per-request
``model``) and runs other commands where it reads them; ``/model`` then gets that surface's
answer for an unknown command: TUI 4018 "unknown command", while on ACP and over HTTP the text
simply reaches the model.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from tests.acp.client import Agent
from tests.api.api_helpers import Server, call
from tests.tui.client import RpcFailure, TuiProcess

from .transports import (
    acp_agent,
    acp_reply,
    acp_updates_after,
    api_chat,
    make_home,
    reply_text,
    start_api,
    start_tui,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")
DISABLED = {"HERMES_DISABLE_PLUGINS": "model-switch"}


class TuiSurface:
    """The TUI gateway: commands through ``command.dispatch``, turns through ``prompt.submit``."""

    name = "tui"
    reads_commands = True

    def __init__(self, proc: TuiProcess, workspace: Path) -> None:
        self.proc = proc
        self.workspace = workspace
        self.sid = ""

    async def new_session(self) -> None:
        self.sid = self.proc.create(cwd=str(self.workspace))

    async def turn(self, text: str) -> str:
        reply: str = self.proc.turn(self.sid, text)["text"]
        return reply

    async def command(self, text: str) -> str:
        try:
            directive = self.proc.call("command.dispatch", session_id=self.sid, command=text)
        except RpcFailure as exc:
            return f"error {exc.code}: {exc.message}"
        assert directive["type"] == "exec", directive
        output: str = directive["output"]
        return output

    async def set_model(self, ref: str) -> None:
        result = self.proc.call("config.set", session_id=self.sid, key="model", value=ref)
        assert result["scope"] == "session"

    async def listed_commands(self) -> set[str]:
        pairs = self.proc.call("commands.catalog")["pairs"]
        return {name.lstrip("/") for name, _summary in pairs}


class AcpSurface:
    """ACP: a prompt starting with a known command dispatches it; anything else is a turn."""

    name = "acp"
    reads_commands = True

    def __init__(self, agent: Agent, workspace: Path) -> None:
        self.agent = agent
        self.workspace = workspace
        self.sid = ""
        self.created: dict[str, Any] = {}

    async def new_session(self) -> None:
        self.created = await self.agent.new(self.workspace)
        self.sid = self.created["sessionId"]

    async def turn(self, text: str) -> str:
        return await acp_reply(self.agent, self.sid, text)

    async def command(self, text: str) -> str:
        return await acp_reply(self.agent, self.sid, text)

    async def set_model(self, ref: str) -> None:
        result = await self.agent.request(
            "session/set_config_option", {"sessionId": self.sid, "configId": "model", "value": ref}
        )
        model = next(o for o in result["configOptions"] if o["id"] == "model")
        assert model["currentValue"] == ref

    async def listed_commands(self) -> set[str]:
        update = await acp_updates_after(self.agent, self.sid, "available_commands_update")
        return {c["name"] for c in update["availableCommands"]}


class ApiSurface:
    """The API server: chat text is never a command; the request's ``model`` is the hot swap."""

    name = "api"
    reads_commands = False

    def __init__(self, server: Server) -> None:
        self.server = server
        self.sid = ""
        self.model: str | None = None

    async def new_session(self) -> None:
        self.sid = f"matrix-{uuid.uuid4().hex[:12]}"
        self.model = None

    async def turn(self, text: str) -> str:
        return reply_text(await api_chat(self.server, text, session_id=self.sid, model=self.model))

    async def command(self, text: str) -> str:
        return await self.turn(text)

    async def set_model(self, ref: str) -> None:
        self.model = ref  # per request: the API never persists a model

    async def listed_commands(self) -> set[str] | None:
        return None


Surface = TuiSurface | AcpSurface | ApiSurface


@pytest.fixture(scope="module")
def places(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Return the module's ``(home, workspace)``."""
    return make_home(tmp_path_factory.mktemp("no-model-switch"))


@pytest_asyncio.fixture(scope="module", loop_scope="module", params=["tui", "acp", "api"])
async def transport(request: pytest.FixtureRequest, places: tuple[Path, Path]) -> AsyncIterator[Any]:
    """Start one transport with ``model-switch`` disabled, for all of the module's tests."""
    home, workspace = places
    if request.param == "tui":
        proc = start_tui(home, env=DISABLED)
        yield proc, workspace
        assert proc.close() == 0
    elif request.param == "acp":
        async with acp_agent(home, workspace, env=DISABLED) as agent:
            yield agent, workspace
    else:
        server = start_api(home, env=DISABLED)
        yield server, workspace
        server.stop()


@pytest_asyncio.fixture(loop_scope="module")
async def surface(transport: Any) -> Surface:
    """Return the transport's surface on a fresh session."""
    handle, workspace = transport
    made: Surface
    if isinstance(handle, TuiProcess):
        made = TuiSurface(handle, workspace)
    elif isinstance(handle, Agent):
        made = AcpSurface(handle, workspace)
    else:
        made = ApiSurface(handle)
    await made.new_session()
    return made


async def test_turns_run_and_the_model_switches_without_the_plugin(surface: Surface) -> None:
    assert await surface.turn("hello") == "You said: hello"
    await surface.set_model("mock:alt")
    assert await surface.turn("again") == "alt: You said: again"


async def test_other_commands_still_work(surface: Surface) -> None:
    await surface.turn("first")
    await surface.turn("second")
    if not surface.reads_commands:
        # The API never reads chat text for commands (docs/slash-commands.md#where-commands-are-recognised):
        # these are ordinary turns.
        assert await surface.command("/status") == "You said: /status"
        assert await surface.command("/help") == "You said: /help"
        return
    status = await surface.command("/status")
    assert "Model: mock:echo" in status
    assert await surface.command("/title Matrix") == "Title set to: Matrix"
    assert (await surface.command("/undo")).endswith("(2 messages): second")
    assert await surface.command("/history") == "You: first\nHermes: You said: first"
    helped = await surface.command("/help")
    assert "/status" in helped and "/model" not in helped


async def test_model_is_not_a_command(surface: Surface) -> None:
    listed = await surface.listed_commands()
    if listed is not None:
        assert "model" not in listed
        assert {"status", "undo", "history", "title"} <= listed
    answer = await surface.command("/model mock:alt")
    if surface.name == "tui":
        assert answer == "error 4018: unknown command: /model"
        # Over the TUI, prompt text is never a command: it reaches the model as typed.
        assert await surface.turn("/model mock:alt") == "You said: /model mock:alt"
    else:
        assert answer == "You said: /model mock:alt"
    # Nothing switched: the next turn still runs on the configured model.
    assert await surface.turn("still echo") == "You said: still echo"


async def test_the_model_choices_are_still_offered(surface: Surface) -> None:
    """The core's model catalog does not depend on the plugin that adds ``/model``."""
    if isinstance(surface, TuiSurface):
        options = surface.proc.call("model.options", session_id=surface.sid)
        assert (options["provider"], options["model"]) == ("mock", "echo")
        mock = next(p for p in options["providers"] if p["slug"] == "mock")
        assert {"echo", "alt", "history"} <= set(mock["models"])
        assert surface.proc.error("command.resolve", name="model").code == 4011
    elif isinstance(surface, AcpSurface):
        assert surface.created["models"]["currentModelId"] == "mock:echo"
        ids = {m["modelId"] for m in surface.created["models"]["availableModels"]}
        assert {"mock:echo", "mock:alt", "mock:history"} <= ids
        option = next(o for o in surface.created["configOptions"] if o["id"] == "model")
        assert option["currentValue"] == "mock:echo"
    else:
        reply = await call(surface.server, "GET", "/api/model/options")
        assert reply.status == 200, reply.text
        assert (reply.json["provider"], reply.json["model"]) == ("mock", "echo")
        mock = next(p for p in reply.json["providers"] if p["slug"] == "mock")
        assert {"echo", "alt", "history"} <= set(mock["models"])
