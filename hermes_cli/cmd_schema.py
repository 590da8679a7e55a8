"""``hermes schema export|diff``: the wire protocols' schemas and the compatibility check.

``export`` asks every loaded plugin's ``hermes_schemas`` hook for its documents
(docs/integrating.md); ``diff`` compares two exports by direction (CONTRIBUTING.md, "The schema
gate"). Exit codes of ``diff``: 0 no breaking change (or, with ``--gate``, breaking changes under
a raised major version), 1 breaking changes, 2 a path that is not an export.
"""

from __future__ import annotations

from pathlib import Path

import click

from hermes_cli.failures import EXIT_FAILURE, EXIT_USAGE, error_line, guarded
from hermes_cli.state import get_state


@click.group("schema")
def schema_group() -> None:
    """Export the wire protocols' schemas; compare two exports."""


@schema_group.command("export")
@click.option(
    "--out",
    "out",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder to write the documents and manifest.json into (created if needed).",
)
@click.pass_context
def export_command(ctx: click.Context, out: Path) -> None:
    """Write every protocol's schema (TUI gateway, API, ACP) and manifest.json into OUT.

    Two exports of the same code are byte-identical; manifest.json holds schema_version and the
    export's sha256, which the servers announce at run time.
    """
    state = get_state(ctx)

    def body() -> int:
        from hermes_cli.schema_export import MANIFEST, build_export, write_export

        specs = state.kernel.registry.schemas
        if not specs:
            error_line("no loaded plugin describes a protocol (hermes_schemas); nothing to export")
            return EXIT_FAILURE
        files = build_export(specs)
        write_export(out, files)
        for name in sorted(files):
            if name != MANIFEST:
                click.echo(str(out / name))
        click.echo(str(out / MANIFEST))
        return 0

    ctx.exit(guarded(body))


@schema_group.command("diff")
@click.argument("old", type=click.Path(path_type=Path))
@click.argument("new", type=click.Path(path_type=Path))
@click.option(
    "--gate",
    is_flag=True,
    help="Exit 0 despite breaking changes when NEW's schema_version has a higher major part.",
)
@click.option("--quiet", "-q", is_flag=True, help="Print only the breaking changes.")
def diff_command(old: Path, new: Path, gate: bool, quiet: bool) -> None:
    """Compare two exports (folders written by `hermes schema export`).

    Prints one line per change, BREAKING or ok. Exit status: 0 no breaking change, 1 breaking
    changes (with --gate: only when schema_version's major part was not raised), 2 OLD or NEW
    is not an export.
    """
    from hermes_cli.schema_diff import NotAnExport, diff_exports, load_export

    try:
        before, after = load_export(old), load_export(new)
    except NotAnExport as exc:
        error_line(str(exc))
        raise SystemExit(EXIT_USAGE) from None
    changes = diff_exports(before, after)
    breaking = [c for c in changes if c.breaking]
    for change in changes:
        if change.breaking or not quiet:
            click.echo(change.line())
    click.echo(
        f"schema_version {before.version} -> {after.version}: "
        f"{len(breaking)} breaking, {len(changes) - len(breaking)} compatible change(s)"
    )
    if not breaking:
        raise SystemExit(0)
    if gate and after.major > before.major:
        click.echo(f"breaking changes allowed: the major version was raised to {after.major}")
        raise SystemExit(0)
    hint = " without raising schema_version's major part" if gate else ""
    error_line(f"{len(breaking)} breaking change(s){hint}")
    raise SystemExit(EXIT_FAILURE)
