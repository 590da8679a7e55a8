"""``hermes version``: print the version constant."""

from __future__ import annotations

import click

from hermes_core import __version__


@click.command("version")
def version_command() -> None:
    """Print the Hermes version."""
    click.echo(f"hermes {__version__}")
