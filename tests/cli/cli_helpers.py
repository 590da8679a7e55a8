"""Helpers for the CLI tests: run the real ``hermes`` script, build throwaway distributions."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

Hermes = Callable[..., "subprocess.CompletedProcess[str]"]
"""The ``hermes`` fixture: run the real script with the test's HERMES_HOME."""

BIN_DIR = Path(sys.executable).parent
HERMES = shutil.which("hermes", path=str(BIN_DIR)) or str(BIN_DIR / "hermes")

# Variables from the developer's shell that would change what the CLI does.
_SCRUB_PREFIXES = ("HERMES_", "OPENAI_", "OPENROUTER_", "ANTHROPIC_", "THROWAWAY_")


def clean_env(
    home: Path, extra: Mapping[str, str] | None = None, pythonpath: Sequence[Path] = ()
) -> dict[str, str]:
    """Return an environment with ``HERMES_HOME=home`` and nothing Hermes-related inherited."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_SCRUB_PREFIXES)}
    env.pop("PYTHONPATH", None)
    env["HERMES_HOME"] = str(home)
    env["XDG_CACHE_HOME"] = str(home / ".cache")
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(str(p) for p in pythonpath)
    env.update(extra or {})
    return env


def run_hermes(
    home: Path,
    *args: str,
    env: Mapping[str, str] | None = None,
    pythonpath: Sequence[Path] = (),
    cwd: Path | None = None,
    timeout: float = 30,
) -> subprocess.CompletedProcess[str]:
    """Run ``hermes ARGS`` as a subprocess and capture its output."""
    return subprocess.run(
        [HERMES, *args],
        env=clean_env(home, env, pythonpath),
        cwd=str(cwd or home),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def write_distribution(
    root: Path, dist: str, modules: Mapping[str, str], entry_points: Mapping[str, str], version: str = "0.1"
) -> Path:
    """Lay out an installed-looking distribution under ``root`` (add ``root`` to PYTHONPATH).

    :param modules: module name → source (dedented).
    :param entry_points: entry-point name → module, in the ``hermes.plugins`` group.
    :returns: ``root``.
    """
    root.mkdir(parents=True, exist_ok=True)
    for name, source in modules.items():
        (root / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    info = root / f"{dist}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n\n", encoding="utf-8"
    )
    lines = ["[hermes.plugins]", *(f"{name} = {target}" for name, target in entry_points.items())]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


THROWAWAY_TRANSPORT = '''
"""A throwaway transport: reports what its factory received as JSON on stderr."""
from __future__ import annotations

import json
import sys

from hermes_core import OptionSpec, TransportSpec, hookimpl


async def factory(ctx):
    ready_at_start = ctx.ready.done()
    print("factory started", file=sys.stderr, flush=True)
    await ctx.ready
    report = {
        "options": dict(ctx.options),
        "ready_at_start": ready_at_start,
        "settings": ctx.settings.model_dump(mode="json"),
        "settings_type": type(ctx.settings).__name__,
        "store": type(ctx.store).__name__,
        "registry_has_me": "throwaway" in ctx.kernel.registry.transports,
    }
    if ctx.options.get("reload"):
        ctx.store.set("throwaway.greeting", "reloaded")
        report["reloaded"] = (await ctx.reload_settings()).model_dump(mode="json")
    print("REPORT " + json.dumps(report), file=sys.stderr, flush=True)
    return int(ctx.options.get("exit_code") or 0)


@hookimpl
def hermes_transports():
    return TransportSpec(
        name="throwaway",
        summary="A throwaway transport for tests.",
        factory=factory,
        options=(
            OptionSpec("flag", "str", "A plain flag that lands in ctx.options."),
            OptionSpec("greeting", "str", "Fills the greeting setting.", field="greeting"),
            OptionSpec("loud", "bool", "Be loud.", group="volume"),
            OptionSpec("quiet", "bool", "Be quiet.", group="volume"),
            OptionSpec("reload", "bool", "Call reload_settings once."),
            OptionSpec("exit_code", "int", "Return this exit code.", default=0),
            OptionSpec("colour", ("red", "green"), "A choice.", default="red"),
        ),
        settings_model="throwaway_settings:Settings",
        config_section="throwaway",
        env={"greeting": "THROWAWAY_GREETING"},
        long_running=False,
    )
'''

THROWAWAY_SETTINGS = '''
"""The throwaway transport's settings model (imported by name, like real transports do)."""
from pydantic import BaseModel, ConfigDict


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    greeting: str = "hello"
    port: int = 0
'''

BROKEN_PLUGIN = """
raise RuntimeError("broken on purpose")
"""

RESERVED_TRANSPORT = """
from hermes_core import TransportSpec, hookimpl


async def factory(ctx):
    return 0


@hookimpl
def hermes_transports():
    return TransportSpec(name="run", summary="Tries to take a built-in name.", factory=factory)
"""

NO_TRANSPORT = """
from hermes_core import hookimpl


@hookimpl
def hermes_lifespan(kernel):
    return None
"""
