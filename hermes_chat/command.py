"""The ``hermes chat`` command (docs/chat.md).

Start-up is budgeted (``bench/bench_chat.py``): the spawned gateway is started first
(:mod:`hermes_chat.spawn`, by ``hermes_cli.early`` before click is imported), so its
own start-up overlaps with the client's; the prompt accepts input at once and prompts typed
before the session exists are sent when it does.
"""

from __future__ import annotations

import os
import sys

import click

EXIT_USAGE = 2


def _root_flags(ctx: click.Context) -> list[str]:
    """Return the root plugin-selection flags, to give the spawned gateway the same plugins."""
    params = ctx.find_root().params
    flags: list[str] = []
    for key, flag in (("plugin", "--plugin"), ("with_plugin", "--with-plugin"), ("no_plugin", "--no-plugin")):
        for name in params.get(key) or ():
            flags += [flag, name]
    return flags


@click.command("chat")
@click.option(
    "--attach",
    "attach",
    metavar="URL",
    help="Attach to a running gateway (hermes tui --ws) at ws://HOST:PORT/api/ws instead of starting one.",
)
@click.option(
    "--token-file",
    "token_file",
    metavar="PATH",
    help="Read the --attach token from this file (else HERMES_TUI_TOKEN, else the gateway's own token file).",
)
@click.option(
    "--resume", "resume", metavar="ID|TITLE", help="Resume a saved conversation by id or exact title."
)
@click.option(
    "--continue",
    "continue_here",
    is_flag=True,
    help="Resume the most recently active conversation of this folder.",
)
@click.option("--model", "model", metavar="PROVIDER:MODEL", help="The model to talk to.")
@click.pass_context
def chat_command(
    ctx: click.Context,
    attach: str | None,
    token_file: str | None,
    resume: str | None,
    continue_here: bool,
    model: str | None,
) -> None:
    """Talk to the agent in this terminal (a client of the TUI gateway).

    Starts `hermes tui` on stdio and talks to it, or attaches to a running gateway with
    --attach. With stdin not a terminal, reads one prompt per line and prints the replies.
    """
    from hermes_chat import spawn

    if resume is not None and continue_here:
        raise click.UsageError("--resume and --continue cannot be used together")
    if token_file is not None and attach is None:
        raise click.UsageError("--token-file only applies with --attach")
    cwd = os.getcwd()
    if attach is None:
        argv = spawn.gateway_argv(_root_flags(ctx))
        early = spawn.take(argv)  # started by hermes_cli.early before click was loaded, if so
        if early is None:
            try:
                early = spawn.spawn_gateway(argv, cwd, spawn.log_path())  # before the imports below
            except OSError as exc:
                click.echo(f"Error: cannot start hermes tui: {exc}", err=True)
                ctx.exit(1)
    from hermes_chat.link import LinkError, SpawnConnector, WsConnector, data_dir, read_token

    connector: SpawnConnector | WsConnector
    if attach is None:  # started above (early is set unless ctx.exit ended the command)
        connector = SpawnConnector(argv, cwd, spawn.log_path())
        connector.early = early
    else:
        if not attach.startswith(("ws://", "wss://")):
            raise click.UsageError("--attach takes a WebSocket URL: ws://HOST:PORT/api/ws")
        try:
            token = read_token(token_file, dict(os.environ), data_dir() / "tui-gateway.token")
        except LinkError as exc:
            click.echo(f"Error: {exc}", err=True)
            ctx.exit(EXIT_USAGE)
        if not token:
            click.echo("Error: no token for --attach: pass --token-file or set HERMES_TUI_TOKEN", err=True)
            ctx.exit(EXIT_USAGE)
        connector = WsConnector(attach, token)
    from hermes_cli.event_loop import run as run_loop

    options = {"cwd": cwd, "resume": resume, "continue_here": continue_here, "model": model}
    if _interactive():
        from hermes_chat.app import run_app

        code = run_loop(run_app(connector, **options))  # type: ignore[arg-type]
    else:
        from hermes_chat.plain import run_plain

        code = run_loop(run_plain(connector, **options))  # type: ignore[arg-type]
    ctx.exit(code)


def _interactive() -> bool:
    """Return whether both stdin and stdout are a terminal."""
    try:
        return sys.stdin.isatty() and sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False
