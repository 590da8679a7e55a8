"""``hermes scenario list|check|show``: the scenario kit for host authors
(docs/reference/scenarios.md).

``check`` and ``show`` stop with ``Error: FILE:LINE: problem`` and exit code 2 on a broken file.
``show`` prints the scenario as JSON, so a host in any language can read what it should send and
answer without a TOML parser.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import click

from hermes_cli.failures import guarded


@click.group("scenario")
def scenario_group() -> None:
    """Scenario files for testing hosts: list the shipped ones, check one, show one as JSON."""


@scenario_group.command("list")
def list_command() -> None:
    """Print the path of every shipped scenario, one a line."""
    from hermes_core.scenarios import shipped

    for path in shipped():
        click.echo(str(path))


@scenario_group.command("check")
@click.argument("path", type=click.Path(path_type=Path))
def check_command(path: Path) -> None:
    """Check a scenario file; print ``ok: PATH`` or its first problem (exit 2)."""
    from hermes_core.scenarios import load_scenario

    guarded(lambda: load_scenario(path))
    click.echo(f"ok: {path}")


@scenario_group.command("show")
@click.argument("path", type=click.Path(path_type=Path))
def show_command(path: Path) -> None:
    """Print a scenario as JSON: turns (user, steps with their expected questions), subagents, faults."""
    from hermes_core.scenarios import load_scenario

    scenario = guarded(lambda: load_scenario(path))
    click.echo(json.dumps(dataclasses.asdict(scenario), indent=2, ensure_ascii=False))
