"""What the docs and messages tell users to install is this project, in the form the tests run.

This project is the distribution ``hermes-kernel``; ``hermes-agent`` is upstream Hermes, a
different project (README.md, "Installing"). Every ``pip install`` of an extra reads
``pip install 'hermes-kernel[EXTRA]'``, the exact requirement ``tests/distribution`` installs
into fresh venvs, and nothing asks pip for ``hermes-agent``, except ``pip download`` of its wheel
for the Ink TUI's ``entry.js`` (docs/protocols/tui-gateway.md#using-the-ink-tui), which never
installs it. (The API server's model id and
platform value ``"hermes-agent"`` are protocol values, not a distribution, and stay.)
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from hermes_launcher import clash_message
from tests.test_self_contained import ROOT, _tracked_text_files

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
# Extras for development only: `pip install -e '.[test]'` in a fresh venv is what .ci/run does.
DEV_EXTRAS = frozenset({"test"})
EXTRAS = sorted(set(PYPROJECT["project"]["optional-dependencies"]) - DEV_EXTRAS)
# As a requirement (with an extra or a version) or on a pip install line.
UPSTREAM_REQUIREMENT = re.compile(r"hermes[-_.]agent\s*(\[|[<>=~!]=|[<>@])", re.IGNORECASE)
PIP_INSTALL_UPSTREAM = re.compile(r"pip\s+install\b[^`'\"\n]*\bhermes[-_.]agent\b", re.IGNORECASE)
PIP_DOWNLOAD = re.compile(r"pip\s+download\s+hermes-agent==[0-9.]+\s+--no-deps\b")
EXTRA_MENTION = re.compile(r"hermes-kernel\[([^\]]*)\]")
EXTRA_COMMAND = re.compile(r"pip\s+install\s+'(hermes-kernel\[[^\]]*\])'")


def install_command(extra: str) -> str:
    """Return the requirement the docs tell users to install for ``extra`` (``pip install '…'``)."""
    return f"hermes-kernel[{extra}]"


def _user_facing() -> list[Path]:
    """Docs, README, CONTRIBUTING and the code (its messages); not the tests, not pyproject."""
    chosen = []
    for path in _tracked_text_files():
        relative = path.relative_to(ROOT).as_posix()
        if relative.startswith(
            ("docs/", "hermes_core/", "hermes_cli/", "hermes_chat/", "hermes_launcher/", "plugins/")
        ):
            chosen.append(path)
        elif relative in ("README.md", "CONTRIBUTING.md"):
            chosen.append(path)
    return chosen


def test_nothing_asks_pip_for_upstreams_hermes_agent() -> None:
    found = []
    for path in _user_facing():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if PIP_DOWNLOAD.search(line) and not PIP_INSTALL_UPSTREAM.search(line):
                continue  # downloading upstream's wheel to unpack the Ink TUI, never installing it
            if UPSTREAM_REQUIREMENT.search(line) or PIP_INSTALL_UPSTREAM.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not found, "\n".join(found)


def test_every_extra_is_installed_with_the_one_tested_command() -> None:
    mentioned: set[str] = set()
    for path in _user_facing():
        text = " ".join(path.read_text(encoding="utf-8").split())  # a command may wrap
        commands = EXTRA_COMMAND.findall(text)
        mentions = EXTRA_MENTION.findall(text)
        where = path.relative_to(ROOT)
        assert len(commands) == len(mentions), f"{where}: hermes-kernel[…] outside `pip install '…'`"
        for requirement in commands:
            extra = requirement.removeprefix("hermes-kernel[").removesuffix("]")
            if extra == "EXTRA":  # README.md's general form
                continue
            assert extra in EXTRAS, f"{where}: {requirement} names no extra of pyproject.toml"
            assert requirement == install_command(extra)
            mentioned.add(extra)
    # Each extra for users is documented (console-tests only serves this project's own tests).
    undocumented = sorted(set(EXTRAS) - {"console-tests"} - mentioned)
    assert not undocumented, f"no `pip install 'hermes-kernel[EXTRA]'` in the docs for {undocumented}"
    assert {"postgres", "redis", "mcp"} <= mentioned


def test_the_template_and_the_docs_plugins_depend_on_hermes_kernel() -> None:
    template = tomllib.loads(
        (ROOT / "docs" / "plugin-template" / "pyproject.toml").read_text(encoding="utf-8")
    )
    assert template["project"]["dependencies"] == ["hermes-kernel>=0.1"]
    for page in ("writing-plugins.md", "writing-providers.md", "writing-tools.md", "writing-transports.md"):
        text = (ROOT / "docs" / page).read_text(encoding="utf-8")
        assert '"hermes-kernel>=0.1"' in text, page


def test_the_readme_shows_the_line_hermes_prints() -> None:
    shown = clash_message("0.19.0", "/…/site-packages").split("`", 1)[0]
    assert f"Error: {shown}`" in (ROOT / "README.md").read_text(encoding="utf-8")
    assert PYPROJECT["project"]["name"] == "hermes-kernel"
