"""``hermes version``: print the version constant."""

from __future__ import annotations

import click

from hermes_cli.main import version_line


@click.command("version")
def version_command() -> None:
    """Print the Hermes version and the distribution it comes from."""
    click.echo(version_line())
