"""The ``hermes`` console script.

``hermes --version`` answers from a constant and ``hermes --help`` from
:mod:`hermes_cli.root_help`, neither importing click or any plugin; everything else goes to the
lazy click group in :mod:`hermes_cli.app`, after a transport that declares an early hook
(:mod:`hermes_cli.early`) has had the chance to start its handshake. ``hermes tui`` alone (what
``hermes chat`` spawns) runs without click (:func:`hermes_cli.transport_run.run_plain`).
``hermes`` without arguments on a terminal runs ``hermes chat``; elsewhere it prints the help.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``hermes`` command line.

    :param argv: the arguments after the program name (``sys.argv[1:]`` when omitted).
    :returns: the process exit code.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    _reserve_standard_fds()
    if not args and _on_terminal():
        args = ["chat"]  # `hermes` alone on a terminal talks; anywhere else it prints the help
    if args[:1] == ["chat"]:
        from hermes_cli.early import start_early

        start_early(args)  # the chat's gateway starts before anything else is imported
    if args in (["--version"], ["version"]):
        sys.stdout.write(version_line() + "\n")
        return 0
    from hermes_cli.paths import home_problem

    problem = home_problem()
    if problem is not None:
        sys.stderr.write(f"Error: {problem}\n")
        return 2
    if args and args[-1] == "--tui":
        from hermes_cli.ink import launch, tui_args

        selection = tui_args(args)
        if selection is not None:
            return launch(selection)
    flags = _root_help_flags(args)
    if flags is not None:
        from hermes_cli.root_help import plugin_commands, render_root_help

        sys.stdout.write(render_root_help(plugin_commands(*flags)))
        return 0
    from hermes_cli.early import start_early
    from hermes_cli.startup_gc import pause, resume

    pause()  # collection resumes once the plugins are loaded (hermes_cli/startup_gc.py)
    start_early(args)
    state = None
    try:
        if len(args) == 1 and args[0] in _PLAIN_TRANSPORTS:
            from hermes_cli.state import CliState
            from hermes_cli.transport_run import run_plain

            state = CliState()
            plain = run_plain(state, args[0])
            if plain is not None:
                return plain
        from hermes_cli.app import cli

        cli.main(args, prog_name="hermes", standalone_mode=True, obj=state)
    except SystemExit as exc:
        code = exc.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        sys.stderr.write(f"{code}\n")
        return 1
    finally:
        resume()  # a command that never loaded plugins (or an in-process caller) collects again
    return 0


def version_line() -> str:
    """Return what ``hermes --version`` prints: the command, its version and its distribution."""
    from hermes_core import __distribution__, __version__

    return f"hermes {__version__} ({__distribution__})"


_SELECTION_FLAGS = ("--plugin", "--no-plugin", "--with-plugin")
# Transports run without click when given alone (hermes_cli/transport_run.py): `hermes tui` on
# stdio is what `hermes chat` spawns, and click is some 12 ms of the gateway's start-up.
_PLAIN_TRANSPORTS = ("tui",)


def _root_help_flags(args: list[str]) -> tuple[list[str], list[str], list[str]] | None:
    """For a root help request (``--help``, ``-h``, ``help``), the selection flags before it.

    ``hermes --no-plugin X --help`` must list the commands of the plugins it would load, and
    click handles the eager ``--help`` before it reads ``--no-plugin``; so root help is answered
    here whenever the arguments are only selection flags and one help word.

    :returns: the ``--plugin``, ``--no-plugin`` and ``--with-plugin`` names, or None when the
        arguments are not a root help request.
    """
    if not args or args[-1] not in ("--help", "-h", "help"):
        return None
    picked: dict[str, list[str]] = {flag: [] for flag in _SELECTION_FLAGS}
    rest = args[:-1]
    while rest:
        head = rest.pop(0)
        flag, sep, value = head.partition("=")
        if flag not in picked:
            return None
        if not sep:
            if not rest:
                return None
            value = rest.pop(0)
        picked[flag].append(value)
    return picked["--plugin"], picked["--no-plugin"], picked["--with-plugin"]


def _on_terminal() -> bool:
    """Return whether stdin and stdout are both a terminal (a person is typing)."""
    try:
        return sys.stdin.isatty() and sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def _reserve_standard_fds() -> None:
    """Put /dev/null on any of fds 0-2 the parent closed.

    Otherwise the next file or socket opened lands on that number: the event loop's wake-up
    socket becomes "stdout" and frames, logs and the loop's own signalling corrupt each other.
    With /dev/null there, a stdio transport simply sees EOF or writes into nothing.
    """
    import os

    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            try:
                opened = os.open(os.devnull, os.O_RDWR)
            except OSError:
                return
            if opened != fd:  # a lower fd was free too; keep counting up from there
                os.dup2(opened, fd)
                os.close(opened)
    # Python leaves sys.stdin/stdout/stderr as None for a descriptor that was closed at start.
    for name, fd, mode in (("stdin", 0, "r"), ("stdout", 1, "w"), ("stderr", 2, "w")):
        if getattr(sys, name) is None:
            setattr(sys, name, open(fd, mode, encoding="utf-8", closefd=False))


if __name__ == "__main__":
    sys.exit(main())
