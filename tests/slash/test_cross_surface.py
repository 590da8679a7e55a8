"""One session across the TUI, ACP and the API, all sharing one ``HERMES_HOME`` and SQLite file.

A user switches the model with ``/model`` on the TUI and undoes a turn there; the IDE (ACP)
loads the session on that model without the undone turn and undoes one of its own; HTTP turns
on the session that name no model use the switched model and see the same history; the TUI
then shows all of it. Each surface closes the session before the next one writes, as a user
would (a session has one writer at a time, docs/reference/core.md#writer-lease).

The ``mock:history`` model answers with every user message it was sent, so a reply shows both
which model ran and which history it saw.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes_core.testing import make_kernel
from tests.tui.client import TuiProcess

from .transports import (
    acp_agent,
    acp_reply,
    acp_updates_after,
    api_chat,
    make_home,
    reply_text,
    start_api,
    start_tui,
    write_throwaway_plugin,
)


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path]:
    """Return ``(home, workspace)`` for one test."""
    return make_home(tmp_path)


@pytest.fixture
def tui(places: tuple[Path, Path]) -> Iterator[TuiProcess]:
    """A gateway in the test's home."""
    proc = start_tui(places[0])
    yield proc
    proc.close()


def _user_texts(tui: TuiProcess, sid: str) -> list[str]:
    return [m["text"] for m in tui.call("session.history", session_id=sid)["messages"] if m["role"] == "user"]


async def test_model_and_undo_travel_between_surfaces(tui: TuiProcess, places: tuple[Path, Path]) -> None:
    home, workspace = places
    # -- TUI: three turns, /undo the last, /model mock:history, then close the session.
    sid = tui.create(cwd=str(workspace))
    for text in ("one", "two", "three"):
        tui.turn(sid, text)
    undone = tui.call("command.dispatch", session_id=sid, command="/undo")
    assert undone["output"].endswith(": three")
    switched = tui.call("command.dispatch", session_id=sid, command="/model mock:history")
    assert switched["type"] == "exec" and "mock:history" in switched["output"]
    assert tui.call("session.close", session_id=sid) == {"closed": True}

    # -- ACP: session/load replays the history without "three", on the switched model.
    async with acp_agent(home, workspace) as agent:
        loaded = await agent.request(
            "session/load", {"sessionId": sid, "cwd": str(workspace), "mcpServers": []}
        )
        assert loaded["models"]["currentModelId"] == "mock:history"
        model_option = next(o for o in loaded["configOptions"] if o["id"] == "model")
        assert model_option["currentValue"] == "mock:history"
        replayed = [
            u["content"]["text"] for u in agent.updates(sid) if u["sessionUpdate"] == "user_message_chunk"
        ]
        assert replayed == ["one", "two"]
        assert await acp_reply(agent, sid, "four") == "Turns: one | two | four"
        assert (await acp_reply(agent, sid, "/undo")).endswith(": four")
        await agent.request("session/close", {"sessionId": sid})

    # -- API: a turn naming no model runs on mock:history and sees ACP's undo; a per-turn
    #    model is a hot swap that persists nothing.
    server = start_api(home)
    try:
        reply = await api_chat(server, "five", session_id=sid)
        assert reply_text(reply) == "Turns: one | two | five"
        assert reply.headers["X-Hermes-Model"] == "mock:history"
        assert reply.json["hermes"]["model_source"] == "session"
        swapped = await api_chat(server, "six", session_id=sid, model="mock:alt")
        assert reply_text(swapped) == "alt: You said: six"
        again = await api_chat(server, "seven", session_id=sid)
        assert reply_text(again) == "Turns: one | two | five | six | seven"
    finally:
        server.stop()

    # -- TUI again: the resumed session keeps the model and shows every surface's turns, minus
    #    the two undone ones (still in the archive).
    resumed = tui.call("session.resume", session_id=sid)
    assert resumed["info"]["model"] == "mock:history"
    assert _user_texts(tui, sid) == ["one", "two", "five", "six", "seven"]
    archived = tui.call("session.history", session_id=sid, include_archived=True)["messages"]
    assert {m["text"] for m in archived if m.get("active") is False and m["role"] == "user"} == {
        "three",
        "four",
    }
    assert tui.turn(sid, "eight")["text"] == "Turns: one | two | five | six | seven | eight"


async def test_every_surface_lists_the_same_commands(tmp_path: Path, places: tuple[Path, Path]) -> None:
    home, workspace = places
    plugin_env = write_throwaway_plugin(tmp_path / "dist")
    # What every installed entry point registers, as this test process sees it (no throwaway).
    registry = make_kernel(entry_points=True).registry
    first_party = {name: spec for name, spec in registry.commands.items() if spec.name == name}
    tui = start_tui(home, env=plugin_env)
    try:
        catalog = tui.call("commands.catalog")
        assert catalog["warning"] == ""
        listed = dict(catalog["pairs"])
        expected = {f"/{n}": s.summary for n, s in first_party.items()}
        expected |= {"/deploy": "Ship the workspace somewhere", "/palette": "Open the command palette"}
        assert listed == expected
        ops = next(c for c in catalog["categories"] if c["name"] == "ops")
        assert dict(ops["pairs"]) == {
            "/deploy": "Ship the workspace somewhere",
            "/palette": "Open the command palette",
        }
        # command.resolve agrees with the catalog for every name and alias, third-party ones too.
        for name, summary in listed.items():
            assert tui.call("command.resolve", name=name)["description"] == summary
        for alias, canonical in catalog["canon"].items():
            assert tui.call("command.resolve", name=alias)["canonical"] == canonical
        aliases = {f"/{a}": f"/{n}" for n, spec in first_party.items() for a in spec.aliases}
        assert catalog["canon"] == aliases | {"/ship": "/deploy"}
        assert catalog["canon"]["/fork"] == "/branch"
        # command.dispatch finds each of them: /help NAME answers from the registry dispatch uses.
        sid = tui.create(cwd=str(workspace))
        for name in listed:
            helped = tui.call("command.dispatch", session_id=sid, command=f"/help {name}")
            assert helped["output"].split("\n", 1)[1].startswith(f"  {listed[name]}"), helped
        # It runs the third-party handlers, by name and by alias.
        ran = tui.call("command.dispatch", session_id=sid, command="/ship prod")
        assert ran == {"type": "exec", "output": "deploying prod"}
        assert tui.call("command.dispatch", command="/palette") == {
            "type": "exec",
            "output": "palette opened",
        }
        assert tui.error("command.dispatch", session_id=sid, command="/nosuch").code == 4018
    finally:
        tui.close()

    async with acp_agent(home, workspace, env=plugin_env) as agent:
        created = await agent.new(workspace)
        acp_sid = created["sessionId"]
        update = await acp_updates_after(agent, acp_sid, "available_commands_update")
        offered = {c["name"]: c for c in update["availableCommands"]}
        # ACP offers the same registry minus what it cannot run: commands unavailable on ACP
        # (docs/slash-commands.md#where-commands-are-recognised) and those needing a terminal UI.
        not_on_acp = {n for n, s in first_party.items() if "acp" in s.unavailable_on}
        assert not_on_acp == {"new", "stop", "steer", "queue"}
        assert {f"/{n}": c["description"] for n, c in offered.items()} == {
            name: summary for name, summary in listed.items() if name[1:] not in not_on_acp | {"palette"}
        }
        assert offered["deploy"]["input"] == {"hint": "[TARGET]"}
        assert await acp_reply(agent, acp_sid, "/deploy staging") == "deploying staging"
        assert await acp_reply(agent, acp_sid, "/ship") == "deploying everything"
