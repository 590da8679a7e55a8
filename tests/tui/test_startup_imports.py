"""What ``hermes tui`` imports before it answers the first ``session.create`` (docs/chat.md#budgets).

The gateway's start-up is CPU time a host waits for (``hermes chat`` to an accepted prompt is
budgeted), so nothing is imported on the way that the first answer does not need: no JSON-RPC
library (the gateway calls its method table itself, so neither ``jsonrpcserver`` nor the
``jsonschema`` validator it builds at import), no click (``hermes tui`` given alone needs no
command-line parsing), and no metadata-header parsing (the CLI found the
entry points already and hands them to the loader, stevedore), and only the method
modules a session needs to open and take prompts (the rest load on their first call). A throwaway plugin
records ``sys.modules`` when the kernel stops, after the session was created.
"""

from __future__ import annotations

from pathlib import Path

from tests.cli.cli_helpers import write_distribution
from tests.timing import eventually_sync
from tests.tui.client import TuiProcess

RECORDER = '''
"""Writes the names in sys.modules to $MODULES_OUT when the kernel stops."""
import contextlib
import os
import sys

from hermes_core import hookimpl


@contextlib.asynccontextmanager
async def _record(kernel):
    yield
    with open(os.environ["MODULES_OUT"], "w", encoding="utf-8") as out:
        out.write("\\n".join(sorted(sys.modules)))
    from pydantic import BaseModel

    made, todo = [], [BaseModel]
    while todo:
        made += (subclasses := todo.pop().__subclasses__())
        todo += subclasses
    with open(os.environ["MODULES_OUT"] + ".models", "w", encoding="utf-8") as out:
        out.write("\\n".join(sorted(f"{m.__module__}.{m.__qualname__}" for m in made)))
    import dataclasses

    undocumented = [  # dataclasses writes these a docstring with inspect.signature: slow
        f"{name}.{value.__qualname__}"
        for name, module in list(sys.modules.items())
        if name.startswith("hermes")
        for value in list(vars(module).values())
        if dataclasses.is_dataclass(value) and isinstance(value, type) and value.__module__ == name
        and (value.__doc__ or "").startswith(value.__name__ + "(")
    ]
    with open(os.environ["MODULES_OUT"] + ".undocumented", "w", encoding="utf-8") as out:
        out.write("\\n".join(sorted(undocumented)))


@hookimpl
def hermes_lifespan(kernel):
    return _record(kernel)
'''

#: Imported by nothing the first answer needs (the method modules load on their first call).
NEVER = (
    # `hermes tui` alone runs without the CLI's click layer (hermes_cli/transport_run.py)
    "click",
    "jsonrpcserver",
    "jsonschema",
    "email.parser",
    "email.feedparser",
    "hermes_tui_gateway.methods_attach",
    "hermes_tui_gateway.methods_commands",
    "hermes_tui_gateway.methods_history",
    # the "off" answers of features Hermes lacks and their thirty models (on first call only)
    "hermes_tui_gateway.feature_off",
    "hermes_tui_gateway.wire_off",
    # the question broker: a session that asked nothing lists and closes its questions without it
    "hermes_core.questions",
    # MCP with no server configured: the tool source is there, its configuration reader is not
    "hermes_mcp.config",
    "hermes_mcp.results",
    # spend and rate limits: kernel.budgets is made when a turn first charges one, and a
    # ledger plugin declares its LedgerSpec without the ledger's vocabulary
    "hermes_core.budgets",
    "hermes_core.budget_ledger",
)

#: The params models made at import: the base classes and session.create's (every other method's
#: is made on its first call, hermes_tui_gateway/wire_params.py).
WIRE_PARAMS_MADE = ("ParamsModel", "SeedMessageParam", "SessionCreateParams", "SessionParams")


def test_the_first_session_needs_no_jsonrpc_library_nor_metadata_parsing(home: Path, tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    write_distribution(dist, "recorder", {"modules_recorder": RECORDER}, {"recorder": "modules_recorder"})
    out = tmp_path / "modules.txt"
    with TuiProcess(home, env={"PYTHONPATH": str(dist), "MODULES_OUT": str(out)}) as tui:
        sid = tui.create()
        assert sid
        assert tui.close() == 0
    modules = set(out.read_text(encoding="utf-8").split("\n"))
    # The record is real: the gateway's methods and the recorder itself were imported.
    assert {"hermes_tui_gateway.methods_session", "modules_recorder"} <= modules
    loaded = sorted(m for m in modules if m.split(".")[0] in NEVER or m in NEVER)
    assert loaded == [], f"imported before the first answer: {loaded}"
    # Of the gateway's params models, only those of session.create (and session.close) were made.
    made = Path(f"{out}.models").read_text(encoding="utf-8").split("\n")
    params = sorted(m for m in made if m.startswith("hermes_tui_gateway.wire_params"))
    assert params == [f"hermes_tui_gateway.wire_params.{name}" for name in WIRE_PARAMS_MADE], params
    # Every dataclass of ours on the way has a docstring (a missing one costs a signature).
    assert Path(f"{out}.undocumented").read_text(encoding="utf-8") == ""


CACHE_PROBE = '''
"""Writes whether the command cache exists to $CACHE_SEEN when the kernel has started."""
import contextlib
import os
from pathlib import Path

from hermes_core import hookimpl


@contextlib.asynccontextmanager
async def _probe(kernel):
    cache = Path(os.environ["XDG_CACHE_HOME"]) / "hermes" / "commands.json"
    Path(os.environ["CACHE_SEEN"]).write_text(str(cache.exists()), encoding="utf-8")
    yield


@hookimpl
def hermes_lifespan(kernel):
    return _probe(kernel)
'''


def test_the_gateway_remembers_the_commands_for_help_after_it_started(home: Path, tmp_path: Path) -> None:
    """``hermes --help``'s command cache is written off the start-up path, yet still written."""
    dist = tmp_path / "dist"
    write_distribution(dist, "probe", {"cache_probe": CACHE_PROBE}, {"probe": "cache_probe"})
    seen = tmp_path / "seen.txt"
    cache = home / ".cache" / "hermes" / "commands.json"
    with TuiProcess(home, env={"PYTHONPATH": str(dist), "CACHE_SEEN": str(seen)}) as tui:
        assert tui.create()
        assert tui.close() == 0
    # Not yet while the kernel started (the first session was still to come) …
    assert seen.read_text(encoding="utf-8") == "False"
    # … but by the time the gateway ended, with the transports of the plugins it loaded.
    assert '"tui"' in cache.read_text(encoding="utf-8")


WATCHER = '''
"""Writes the names in sys.modules to $MODULES_OUT as soon as the first session is live."""
import asyncio
import contextlib
import os
import sys

from hermes_core import hookimpl


async def _watch(kernel):
    while not kernel.sessions.live:
        await asyncio.sleep(0)  # every loop turn: before the answer to session.create is out
    with open(os.environ["MODULES_OUT"], "w", encoding="utf-8") as out:
        out.write("\\n".join(sorted(sys.modules)))


@contextlib.asynccontextmanager
async def _run(kernel):
    task = asyncio.create_task(_watch(kernel))
    yield
    task.cancel()


@hookimpl
def hermes_lifespan(kernel):
    return _run(kernel)
'''

#: Needed later in a session's life (a delegation, closing it, a tool call), not to open it.
NOT_TO_OPEN = (
    "hermes_core.subagents",
    "hermes_core.subagent",
    # the approval policy and the allowlist file: read after start, or by the first tool call
    "hermes_core.approvals",
)


def test_opening_the_first_session_needs_no_subagent_table(home: Path, tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    write_distribution(dist, "watcher", {"modules_watcher": WATCHER}, {"watcher": "modules_watcher"})
    out = tmp_path / "modules.txt"
    with TuiProcess(home, env={"PYTHONPATH": str(dist), "MODULES_OUT": str(out)}) as tui:
        assert tui.create()
        assert tui.close() == 0
    modules = set(out.read_text(encoding="utf-8").split("\n"))
    assert {"hermes_core.session.live", "modules_watcher"} <= modules
    loaded = sorted(m for m in NOT_TO_OPEN if m in modules)
    assert loaded == [], f"imported to open the first session: {loaded}"


def test_an_unreadable_allowlist_is_still_reported_at_start_up(home: Path) -> None:
    """The allowlist is read after the first answer, but its warning needs no tool call."""
    (home / "approvals.json").write_text("not json", encoding="utf-8")
    with TuiProcess(home) as tui:
        assert tui.create()
        eventually_sync(lambda: "ignoring unreadable approvals file" in tui.stderr_text(), what="the warning")
        assert str(home / "approvals.json") in tui.stderr_text()
        assert tui.close() == 0
