"""The ``hermes`` console script: check the environment is ours, then run :mod:`hermes_cli.main`.

Upstream Hermes is a different project published as ``hermes-agent``. Its wheel installs a
top-level ``hermes_cli`` package and a ``hermes`` command too, so the two cannot share an
environment: pip writes both into the same places and whichever was installed last owns
``hermes_cli/__init__.py``, ``hermes_cli/main.py`` and the ``hermes`` script, and an editable
install of this project loses ``hermes_cli`` to the copy in site-packages whatever the order.

This package is the one thing only we ship that the ``hermes`` script imports before anything
named ``hermes_cli``. It looks for a ``hermes-agent`` distribution on ``sys.path`` (a directory
listing per entry, a fraction of a millisecond, so ``hermes --version`` keeps its budget) and,
when there is one, prints one line saying so and how to repair the environment instead of
running code that may be the other project's. When upstream was installed last its own
``hermes`` script replaced ours, and nothing of ours runs at all; reinstalling this project
brings the check back (see README.md, "Installing").
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from hermes_core import __distribution__

CLASHING = "hermes-agent"
"""The distribution that ships a ``hermes_cli`` package and ``hermes`` command of its own."""

EXIT_CLASH = 1


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``hermes`` command line unless another ``hermes-agent`` is installed beside it.

    :param argv: the arguments after the program name (``sys.argv[1:]`` when omitted).
    :returns: the process exit code.
    """
    clash = find_clash(sys.path)
    if clash is not None:
        if sys.stderr is not None:
            sys.stderr.write(f"Error: {clash_message(*clash)}\n")
        return EXIT_CLASH
    from hermes_cli.main import main as cli_main

    return cli_main(argv)


def pi_main(argv: Sequence[str] | None = None) -> int:
    """Run ``hermes pi`` with the given arguments: the ``hermes-pi`` script, a stand-in for ``pi``
    (docs/reference/pi.md#command-line).

    :param argv: the arguments after the program name (``sys.argv[1:]`` when omitted).
    :returns: the process exit code.
    """
    return main(["pi", *(sys.argv[1:] if argv is None else argv)])


def find_clash(path: Sequence[str]) -> tuple[str, str] | None:
    """Find the metadata of a ``hermes-agent`` distribution in the folders of ``path``.

    The standard library's own folders hold no installed distribution and are skipped; the rest
    (site-packages, ``PYTHONPATH`` entries) cost one directory listing each.

    :param path: the import path to look through (``sys.path``).
    :returns: ``(version, folder)`` of the first one found, or None.
    """
    stdlib = os.path.dirname(os.__file__)
    skipped = (stdlib, os.path.join(stdlib, "lib-dynload"))
    for entry in path:
        if entry in skipped:
            continue
        try:
            names = os.listdir(entry or ".")
        except OSError:  # a zip file, a missing folder, an unreadable one
            continue
        for name in names:
            if name.startswith(("h", "H")):
                version = _clashing_version(name)
                if version is not None:
                    return version, entry or "."
    return None


def _clashing_version(name: str) -> str | None:
    """Return the version in a ``hermes_agent-X.dist-info`` folder name, or None for any other.

    Only installed metadata counts: an ``.egg-info`` folder is what a build leaves in a source
    tree (a checkout of this project from before its rename has a ``hermes_agent.egg-info``).
    """
    lowered = name.lower()
    if lowered.startswith(("hermes_agent-", "hermes-agent-")) and lowered.endswith(".dist-info"):
        return name[len("hermes_agent-") : -len(".dist-info")].split("-", 1)[0]
    return None


def clash_message(version: str, folder: str) -> str:
    """Return the one line that says what clashes and how to repair the environment.

    :param version: the clashing distribution's version.
    :param folder: where its metadata was found.
    """
    import shlex  # only on this rare path: hermes --version imports as little as it can

    python = shlex.quote(sys.executable or "python")
    return (
        f"{CLASHING} {version} is installed in this environment too ({folder}); it is another "
        f"distribution whose hermes_cli package and hermes command clash with {__distribution__}'s. "
        f"Remove it with `{python} -m pip uninstall {CLASHING}`, then reinstall {__distribution__} "
        f"with `{_reinstall_command(python)}`"
    )


def _reinstall_command(python: str) -> str:
    """Return the pip command that reinstalls this distribution the way it was installed.

    :param python: the interpreter, quoted for a shell.
    """
    import json
    import shlex
    from importlib import metadata
    from urllib.parse import unquote, urlparse

    generic = f"{python} -m pip install --force-reinstall --no-deps {__distribution__}"
    try:
        raw = metadata.distribution(__distribution__).read_text("direct_url.json")
        origin = json.loads(raw) if raw else None
    except (metadata.PackageNotFoundError, ValueError, OSError):
        return generic
    if not isinstance(origin, dict) or not str(origin.get("url", "")).startswith("file://"):
        return generic
    where = unquote(urlparse(str(origin["url"])).path)
    dir_info = origin.get("dir_info")
    if isinstance(dir_info, dict) and dir_info.get("editable"):
        return f"{python} -m pip install --no-deps -e {shlex.quote(where)}"
    if os.path.exists(where):
        return f"{python} -m pip install --force-reinstall --no-deps {shlex.quote(where)}"
    return generic
