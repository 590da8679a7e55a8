"""The install commands of README.md and docs/, run as written in fresh virtual environments.

Every extra is installed with the command the docs give, ``pip install 'hermes-kernel[EXTRA]'``,
into its own fresh venv; pip resolves it from the local build (the wheel ``python -m build``
made) and the cached wheelhouse only (``--no-index``), so the upstream project that is also
called Hermes can never be what it finds. Then ``hermes --version`` and one ``hermes run`` on the
mock model, with a tool call and the SQLite store, show the installed copy works. The same
command adds an extra to an environment that already has Hermes, the README's ``pip install -e
.`` works from a checkout, and a third-party plugin depending on ``hermes-kernel`` (the plugin
template) installs against the Hermes it finds. ``tests/test_install_docs.py`` checks that the
docs name no other form.
"""

from __future__ import annotations

import json
import shutil
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

import hermes_core
from tests.distribution import builds
from tests.distribution.builds import Built, Venv
from tests.test_install_docs import EXTRAS, install_command

pytestmark = pytest.mark.timeout(900)  # the first test also builds (and may fill the wheelhouse)

PYPROJECT = tomllib.loads((builds.ROOT / "pyproject.toml").read_text(encoding="utf-8"))
VERSION_LINE = f"hermes {hermes_core.__version__} (hermes-kernel)\n"
WRITE = '[[tool write_file {"path": "out.txt", "content": "written by hermes"}]]'


def check_hermes_works(venv: Venv, tmp_path: Path) -> None:
    """``hermes --version`` names the distribution; one ``hermes run`` calls a tool and stores."""
    version = venv.hermes("--version")
    assert (version.returncode, version.stdout, version.stderr) == (0, VERSION_LINE, "")
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    ran = venv.hermes("run", WRITE, cwd=workspace)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith("Done: "), ran.stdout
    assert (workspace / "out.txt").read_text(encoding="utf-8") == "written by hermes"
    assert (venv.path / "home" / "hermes.sqlite3").is_file()


def extra_requirements(built: Built, extra: str) -> list[Requirement]:
    """Return the requirements the wheel's metadata lists for ``extra``."""
    found = []
    for line in built.metadata().get("Requires-Dist", []):
        requirement = Requirement(line)
        if requirement.marker is not None and requirement.marker.evaluate({"extra": extra}):
            if not requirement.marker.evaluate({"extra": ""}):
                found.append(requirement)
    return found


def test_the_wheel_declares_every_extra_of_pyproject(built: Built) -> None:
    assert built.extras() == EXTRAS


@pytest.mark.parametrize("extra", EXTRAS)
def test_each_extra_installs_into_a_fresh_venv(
    extra: str, built: Built, wheelhouse: Path, tmp_path: Path
) -> None:
    venv = Venv.create(tmp_path / "venv", wheelhouse, built.folder)
    venv.pip("install", install_command(extra))
    installed = venv.installed()
    assert installed["hermes-kernel"] == hermes_core.__version__
    assert "hermes-agent" not in installed
    wanted = extra_requirements(built, extra)
    assert wanted, f"the wheel lists no requirement for the {extra!r} extra"
    for requirement in wanted:
        name = requirement.name.lower().replace("_", "-")
        assert name in installed and requirement.specifier.contains(installed[name], prereleases=True), (
            f"{requirement} is not installed by {install_command(extra)!r}: {sorted(installed)}"
        )
    check_hermes_works(venv, tmp_path)


def test_the_wheel_installs_its_data_and_plugins(built: Built, wheelhouse: Path, tmp_path: Path) -> None:
    """``pip install dist/<wheel>``; then an extra added later, then a plugin depending on us."""
    venv = Venv.create(tmp_path / "venv", wheelhouse, built.folder)
    venv.pip("install", str(built.wheel))
    check_hermes_works(venv, tmp_path)
    site = venv.site_packages()
    source = built.source / "plugins" / "hermes_api_server" / "console" / "static"
    assets = sorted(p.name for p in source.iterdir())
    assert sorted(p.name for p in (site / "hermes_api_server" / "console" / "static").iterdir()) == assets
    read = (
        "import importlib.resources as r, json\n"
        "static = r.files('hermes_api_server.console').joinpath('static')\n"
        "print(json.dumps({p.name: len(p.read_bytes()) for p in static.iterdir()}))\n"
    )
    sizes = json.loads(builds.run([str(venv.python), "-c", read], env=venv.env).stdout)
    assert sizes == {name: (source / name).stat().st_size for name in assets}
    listed = venv.hermes("plugins")
    assert listed.returncode == 0, listed.stdout + listed.stderr
    rows = {line.split()[0]: line.split() for line in listed.stdout.splitlines()[1:] if line.strip()}
    declared = PYPROJECT["project"]["entry-points"]["hermes.plugins"]
    for name in declared:
        assert rows[name][1:3] == [hermes_core.__version__, "hermes-kernel"] and rows[name][-1] == "ok", (
            rows.get(name)
        )

    # An extra added later: pip takes hermes-kernel from the environment (not from the index,
    # which here holds only the dependencies, without our wheel).
    later = Venv(path=venv.path, links=(wheelhouse,))
    later.pip("install", install_command("redis"))
    assert "redis" in venv.installed()

    # A third-party plugin (the docs' template) depends on hermes-kernel and installs beside it.
    template = shutil.copytree(builds.ROOT / "docs" / "plugin-template", tmp_path / "hermes-notes")
    later.pip("install", str(template))
    notes = next(line for line in venv.hermes("plugins").stdout.splitlines() if line.startswith("notes "))
    assert "hermes-notes" in notes and notes.endswith("ok"), notes


def test_an_editable_install_from_a_checkout(built: Built, wheelhouse: Path, tmp_path: Path) -> None:
    """README.md's quick start, ``pip install -e .``, in a copy of the checkout."""
    checkout = builds.copy_checkout(tmp_path / "checkout")
    venv = Venv.create(tmp_path / "venv", wheelhouse)
    venv.pip("install", "-e", str(checkout))
    check_hermes_works(venv, tmp_path)
    assert venv.installed()["hermes-kernel"] == hermes_core.__version__
