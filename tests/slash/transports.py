"""Start the three real transports in one ``HERMES_HOME`` for the cross-surface slash tests.

Every process shares the home's ``config.toml`` and SQLite file, as one user's TUI, IDE and HTTP
clients would. The clients are the transport suites' own: :class:`tests.tui.client.TuiProcess`,
the ACP SDK harness of ``tests/acp`` (every agent-sent frame is checked against the schema when
the agent stops) and :func:`tests.api.api_helpers.start_server`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

from tests.acp import wire
from tests.acp.client import Agent, RecordingClient
from tests.api.api_helpers import Reply, Server, call, start_server
from tests.cli.cli_helpers import write_distribution
from tests.timing import eventually
from tests.tui.client import HERMES, TuiProcess, hermes_env

CONFIG = """model = "mock:echo"

[agent]
provider_retries = 0

[titles]
refine = false
"""


def make_home(root: Path) -> tuple[Path, Path]:
    """Create a ``HERMES_HOME`` selecting ``mock:echo`` and a workspace beside it.

    :param root: the test's temporary directory.
    :returns: ``(home, workspace)``, both resolved.
    """
    home = root / "home"
    home.mkdir()
    (home / "config.toml").write_text(CONFIG, encoding="utf-8")
    workspace = root / "ws"
    workspace.mkdir()
    return home.resolve(), workspace.resolve()


def start_tui(home: Path, env: Mapping[str, str] | None = None) -> TuiProcess:
    """Start ``hermes tui`` on stdio and wait for ``gateway.ready``.

    :param home: the shared ``HERMES_HOME``.
    :param env: extra environment variables.
    :returns: the running gateway; the caller closes it.
    """
    proc = TuiProcess(home, env=env, cwd=home)
    try:
        proc.wait_event("", "gateway.ready", timeout=20)
    except TimeoutError:
        proc.close()
        raise AssertionError("hermes tui did not start:\n" + proc.stderr_text()) from None
    return proc


def start_api(home: Path, env: Mapping[str, str] | None = None) -> Server:
    """Start ``hermes api --port 0``; it generates its key into the home.

    :param home: the shared ``HERMES_HOME`` (its ``config.toml`` is left as it is).
    :param env: extra environment variables.
    :returns: the running server; the caller stops it.
    """
    return start_server(home, env=env)


@contextlib.asynccontextmanager
async def acp_agent(home: Path, cwd: Path, env: Mapping[str, str] | None = None) -> AsyncIterator[Agent]:
    """Run ``hermes acp`` through the ACP SDK, initialized, and check its frames when it stops.

    :param home: the shared ``HERMES_HOME``.
    :param cwd: the agent process's working directory.
    :param env: extra environment variables.
    :returns: (yields) the initialized agent.
    """
    from acp import spawn_agent_process

    frames: list[tuple[str, dict[str, Any]]] = []

    def record(event: Any) -> None:
        frames.append(("in" if event.direction.value == "incoming" else "out", event.message))

    stderr_path = home / f"acp-stderr-{len(list(home.glob('acp-stderr-*')))}.log"
    client = RecordingClient()
    with stderr_path.open("wb") as stderr_file:
        async with spawn_agent_process(
            client,  # type: ignore[arg-type]
            HERMES,
            "acp",
            env=hermes_env(home, {"PYTHONUNBUFFERED": "1", **(env or {})}),
            cwd=str(cwd),
            transport_kwargs={"stderr": stderr_file},
            observers=[record],
        ) as (conn, process):
            agent = Agent(conn, process, client, frames, stderr_path)
            await agent.initialize(fs={"readTextFile": False, "writeTextFile": False})
            yield agent
            await asyncio.sleep(0.05)
    problems = wire.validate_frames(frames) + wire.invariants(frames)
    assert not problems, "\n".join(problems[:20])


async def acp_updates_after(agent: Agent, session_id: str, kind: str, timeout: float = 5) -> dict[str, Any]:
    """Wait for the first ``session/update`` of one kind for a session and return it.

    :param agent: the agent.
    :param session_id: the session.
    :param kind: the ``sessionUpdate`` value.
    :param timeout: seconds to wait.
    :returns: the update object.
    """
    found = await eventually(
        lambda: [u for u in agent.updates(session_id) if u.get("sessionUpdate") == kind],
        timeout=timeout,
        what=f"a {kind} for {session_id}",
    )
    return dict(found[0])


async def acp_reply(agent: Agent, session_id: str, text: str) -> str:
    """Send a prompt and return the agent message text it produced.

    :param agent: the agent.
    :param session_id: the session.
    :param text: the prompt.
    :returns: the concatenated ``agent_message_chunk`` text of this prompt.
    """
    before = len(agent.text(session_id))
    result = await agent.prompt(session_id, text)
    assert result["stopReason"] == "end_turn", result
    await agent.settle(0.05)
    return agent.text(session_id)[before:]


async def api_chat(server: Server, text: str, *, session_id: str, model: str | None = None) -> Reply:
    """Send one non-streamed chat completion that continues a stored session.

    :param server: the API server.
    :param text: the user message.
    :param session_id: the session, sent as ``X-Hermes-Session-Id``.
    :param model: the request's ``model`` field; None leaves it out.
    :returns: the reply (asserted 200).
    """
    body: dict[str, Any] = {"messages": [{"role": "user", "content": text}]}
    if model is not None:
        body["model"] = model
    reply = await call(
        server, "POST", "/v1/chat/completions", body, headers={"X-Hermes-Session-Id": session_id}
    )
    assert reply.status == 200, reply.text
    return reply


def reply_text(reply: Reply) -> str:
    """Return the assistant text of a chat completion reply.

    :param reply: the reply.
    :returns: ``choices[0].message.content``.
    """
    text: str = reply.json["choices"][0]["message"]["content"]
    return text


THROWAWAY_COMMANDS = '''
"""A third-party plugin adding two slash commands: one for every surface, one for the TUI only."""
from __future__ import annotations

from hermes_core import CommandResult, CommandSpec, hookimpl


async def deploy(ctx):
    return CommandResult(kind="exec", output=f"deploying {ctx.args or 'everything'}")


async def palette(ctx):
    return CommandResult(kind="exec", output="palette opened")


@hookimpl
def hermes_slash_commands():
    return [
        CommandSpec(
            name="deploy",
            summary="Ship the workspace somewhere",
            handler=deploy,
            usage="/deploy [TARGET]",
            aliases=("ship",),
            category="ops",
            needs_session=False,
        ),
        CommandSpec(
            name="palette",
            summary="Open the command palette",
            handler=palette,
            usage="/palette",
            category="ops",
            needs_session=False,
            needs_terminal_ui=True,
        ),
    ]
'''


def write_throwaway_plugin(root: Path) -> dict[str, str]:
    """Lay out the throwaway command plugin as an installed distribution.

    :param root: an empty folder to hold it.
    :returns: the environment that puts it on a subprocess's ``PYTHONPATH``.
    """
    write_distribution(
        root,
        "throwaway_commands",
        {"throwaway_commands": THROWAWAY_COMMANDS},
        {"throwaway-commands": "throwaway_commands"},
    )
    return {"PYTHONPATH": str(root)}
