"""``hermes --tui``: start upstream Hermes's Ink TUI on this Hermes's TUI gateway
(docs/protocols/tui-gateway.md#using-the-ink-tui).

The Ink TUI is a self-contained Node bundle, ``hermes_cli/tui_dist/entry.js``, shipped in the
``hermes-agent`` 0.19.0 wheel on PyPI. It is never copied into this project: it is found through
``HERMES_INK_TUI`` or as an installed ``hermes_cli/tui_dist/entry.js`` on ``sys.path`` (looked up
as a file, never imported, because that ``hermes_cli`` is upstream's).

The bundle starts its gateway itself, as ``$HERMES_PYTHON -m tui_gateway.entry`` with its own
install root first on ``PYTHONPATH`` and in ``HERMES_CWD``. So ``HERMES_PYTHON`` is pointed at a
small launcher script (written once into the user cache directory) that ignores those arguments and
runs *this* Hermes's ``hermes tui`` (through :mod:`hermes_launcher`, like the ``hermes`` command,
so it refuses to run beside upstream's distribution) with ``python -E -P``: ``-E`` drops the
bundle's ``PYTHONPATH`` and ``-P`` keeps the working folder off ``sys.path``, so neither upstream's
packages nor the user's own files can stand in for ours. ``HERMES_CWD`` is the folder ``hermes
--tui`` was started in, where the gateway then runs and sessions start. ``hermes --tui`` then
replaces itself with ``node entry.js`` (the TUI owns the terminal from there).
Everything here is the standard library; nothing imports click, a plugin or the kernel.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import sys
from collections.abc import Mapping, MutableMapping, Sequence
from pathlib import Path

BUNDLE = Path("hermes_cli") / "tui_dist" / "entry.js"
HOW_TO_GET = (
    "get it from upstream's hermes-agent 0.19.0 wheel, without installing it "
    "(`pip download hermes-agent==0.19.0 --no-deps`, unzip it) and set "
    f"HERMES_INK_TUI to its {BUNDLE.as_posix()}"
)
EXIT_UNAVAILABLE = 2
SELECTION_FLAGS = ("--plugin", "--no-plugin", "--with-plugin")
# Where the TUI's launcher finds the pre-started gateway (hermes_launcher/ink_handoff.py reads it).
SOCKET_ENV = "HERMES_INK_GATEWAY_SOCKET"


class Unavailable(Exception):
    """The Ink TUI cannot start; the message is the one line the user sees."""


def tui_args(args: Sequence[str]) -> list[str] | None:
    """Return the plugin-selection flags of a ``hermes [flags] --tui`` command line, or None when
    the command line is something else."""
    if not args or args[-1] != "--tui":
        return None
    rest = list(args[:-1])
    flags: list[str] = []
    while rest:
        head = rest.pop(0)
        flag, sep, _value = head.partition("=")
        if flag not in SELECTION_FLAGS:
            return None
        flags.append(head)
        if not sep:
            if not rest:
                return None
            flags.append(rest.pop(0))
    return flags


def find_bundle(environ: Mapping[str, str], search: Sequence[str]) -> Path:
    """Return the Ink TUI's ``entry.js``.

    :param environ: the environment (``HERMES_INK_TUI`` wins).
    :param search: folders an installed ``hermes_cli/tui_dist/entry.js`` may be in (``sys.path``).
    :raises Unavailable: when there is none, saying how to get it.
    """
    named = environ.get("HERMES_INK_TUI", "").strip()
    if named:
        path = Path(named).expanduser()
        if not path.is_file():
            raise Unavailable(f"HERMES_INK_TUI={named} is not a file; {HOW_TO_GET}")
        return path.absolute()
    for folder in search:
        candidate = Path(folder or ".") / BUNDLE
        if candidate.is_file():
            return candidate.absolute()
    raise Unavailable(f"the Ink TUI is not installed; {HOW_TO_GET}")


def find_node(environ: Mapping[str, str]) -> str:
    """Return the ``node`` to run the bundle with (``HERMES_NODE``, else ``node`` on ``PATH``)."""
    named = environ.get("HERMES_NODE", "").strip()
    found = shutil.which(named or "node", path=environ.get("PATH"))
    if found is None:
        raise Unavailable(
            f"{named or 'node'} was not found: the Ink TUI needs Node.js 20 or newer on PATH "
            "(or HERMES_NODE naming it)"
        )
    return found


def launcher_text(python: str, hermes_args: Sequence[str]) -> str:
    """Return the script that stands in for ``python -m tui_gateway.entry``."""
    argv = repr([*hermes_args, "tui"])
    code = (
        "import sys; from hermes_launcher.ink_handoff import hand_over; hand_over(); "
        f"from hermes_launcher import main; sys.exit(main({argv}))"
    )
    return (
        "#!/bin/sh\n"
        "# Written by `hermes --tui`. The Ink TUI runs this as `python -m tui_gateway.entry`;\n"
        "# it starts this Hermes's TUI gateway instead (-E: ignore PYTHONPATH, -P: not the cwd).\n"
        f"exec {shlex.quote(python)} -E -P -c {shlex.quote(code)}\n"
    )


def write_launcher(folder: Path, text: str) -> Path:
    """Write the launcher (named after its content, mode 0700) unless it is there already."""
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    path = folder / f"ink-gateway-{digest}.sh"
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return path
    folder.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.chmod(0o700)
    tmp.replace(path)
    return path


def cache_dir() -> Path:
    """Return the user cache directory (``$XDG_CACHE_HOME/hermes`` on Linux)."""
    import platformdirs

    return Path(platformdirs.user_cache_dir("hermes", appauthor=False))


def tui_environment(
    environ: Mapping[str, str], launcher: Path, cwd: str, hermes_bin: str | None
) -> dict[str, str]:
    """Return the environment ``node entry.js`` runs with."""
    env: MutableMapping[str, str] = dict(environ)
    env["HERMES_PYTHON"] = str(launcher)
    env["HERMES_CWD"] = cwd
    if hermes_bin:
        env.setdefault("HERMES_BIN", hermes_bin)
    # The bundle's own install root, not an override pointing anywhere else.
    env.pop("HERMES_PYTHON_SRC_ROOT", None)
    return dict(env)


def prestart_gateway(python: str, hermes_args: Sequence[str], cwd: str, env: Mapping[str, str]) -> str:
    """Start the gateway now, to be claimed by the TUI's launcher (:mod:`hermes_launcher.ink_handoff`).

    :returns: the path of the socket it waits on (for ``HERMES_INK_GATEWAY_SOCKET``).
    :raises OSError: when the socket or the process cannot be made.
    """
    import socket
    import subprocess
    import tempfile

    folder = tempfile.mkdtemp(prefix="hermes-ink-")  # mode 0700: only this user can connect
    path = os.path.join(folder, "gateway.sock")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(path)
        listener.listen(2)
        fd = listener.fileno()
        argv = [*hermes_args, "tui"]
        code = (
            "import sys; from hermes_launcher.ink_handoff import prestart; "
            f"sys.exit(prestart({fd}, {argv!r}, {os.getpid()}))"
        )
        subprocess.Popen(
            [python, "-E", "-P", "-c", code],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(fd,),
            cwd=cwd,
            env=dict(env),
        )
    return path


def launch(selection: Sequence[str]) -> int:
    """Run ``hermes --tui``: exec ``node entry.js``, or print one line and return 2.

    :param selection: plugin-selection flags, passed on to the gateway's ``hermes tui``.
    :returns: only when the TUI cannot start (the exit code); otherwise the process becomes node.
    """
    environ = os.environ
    try:
        if os.name != "posix":
            raise Unavailable("the Ink TUI launcher needs a POSIX system")
        bundle = find_bundle(environ, sys.path)
        node = find_node(environ)
        launcher = write_launcher(cache_dir(), launcher_text(sys.executable, selection))
    except Unavailable as exc:
        sys.stderr.write(f"hermes --tui: {exc}\n")
        return EXIT_UNAVAILABLE
    except OSError as exc:
        sys.stderr.write(f"hermes --tui: cannot write the gateway launcher: {exc}\n")
        return EXIT_UNAVAILABLE
    hermes_bin = shutil.which("hermes", path=str(Path(sys.executable).parent))
    env = tui_environment(environ, launcher, os.getcwd(), hermes_bin)
    if not env.get("HERMES_TUI_GATEWAY_URL") and env.get("HERMES_INK_PRESTART", "1") != "0":
        # The gateway imports while Node loads the bundle (hermes_launcher/ink_handoff.py).
        try:
            env[SOCKET_ENV] = prestart_gateway(sys.executable, selection, os.getcwd(), env)
        except OSError:
            pass  # the launcher then starts the gateway itself, as the TUI asks
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(node, [node, str(bundle)], env)
    return 0  # pragma: no cover - execve does not return
