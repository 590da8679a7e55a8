"""The sdist and the wheel ``python -m build`` makes: our name, every source and data file, the entry points.

The wheel is built from the sdist, so whatever the sdist leaves out is missing here too; the
file lists below are compared with the checkout's package folders, so a new data file (a console
asset, a vendored schema) that ``[tool.setuptools.package-data]`` does not cover fails by name.
"""

from __future__ import annotations

import configparser
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest

import hermes_core
from tests.distribution import builds
from tests.distribution.builds import Built

pytestmark = pytest.mark.timeout(900)  # the first test also builds (and may fill the wheelhouse)

PYPROJECT = tomllib.loads((builds.ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def package_files(source: Path) -> dict[str, str]:
    """Return ``path in the wheel → path in the checkout`` for every file of every import package."""
    found: dict[str, str] = {}
    for relative in builds.checkout_files():
        parts = Path(relative).parts
        if parts[0] in ("hermes_core", "hermes_cli", "hermes_chat", "hermes_launcher"):
            found[relative] = relative
        elif parts[0] == "plugins" and len(parts) > 2 and parts[1].startswith("hermes_"):
            found["/".join(parts[1:])] = relative
        elif relative == "run_agent.py":  # the AIAgent facade, a top-level module (py-modules)
            found[relative] = relative
    assert (source / "pyproject.toml").is_file()
    return found


def test_the_wheel_is_ours_and_holds_every_package_file(built: Built) -> None:
    metadata = built.metadata()
    assert metadata["Name"] == ["hermes-kernel"]
    assert metadata["Version"] == [hermes_core.__version__]
    assert built.wheel.name == f"hermes_kernel-{hermes_core.__version__}-py3-none-any.whl"
    with zipfile.ZipFile(built.wheel) as archive:
        names = set(archive.namelist())
    wanted = package_files(built.source)
    missing = sorted(path for path in wanted if path not in names)
    assert not missing, f"the wheel lacks {missing}"
    # What only tests read (or the repository keeps) stays out of the installed tree.
    assert not [n for n in names if n.startswith(("tests/", "bench/", "docs/", "tools/"))]
    # The data files by name: a typed marker in the kernel and every plugin (what others import;
    # hermes_cli is the command, not a library), the console's assets.
    tops = {path.split("/")[0] for path in wanted if "/" in path} - {"hermes_cli"}
    assert {f"{top}/py.typed" for top in tops} <= names
    statics = sorted(p for p in wanted if p.startswith("hermes_api_server/console/static/"))
    assert {"index.html", "app.js", "console.css"} <= {p.rsplit("/", 1)[1] for p in statics}
    # The vendored ACP schema `hermes schema export` builds on.
    assert "hermes_acp/acp_schema/schema.json" in names
    # The shipped scenarios host authors run (docs/reference/scenarios.md).
    assert {"hermes_core/scenarios/shipped/text.toml", "hermes_core/scenarios/shipped/approval.toml"} <= names


def test_the_wheel_declares_the_command_and_every_plugin(built: Built) -> None:
    with zipfile.ZipFile(built.wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/entry_points.txt"))
        text = archive.read(name).decode("utf-8")
    parser = configparser.ConfigParser(delimiters=("=",))
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(text)
    groups = {section: dict(parser[section]) for section in parser.sections()}
    assert groups["console_scripts"] == {
        "hermes": "hermes_launcher:main",
        "hermes-pi": "hermes_launcher:pi_main",
    }
    declared = PYPROJECT["project"]["entry-points"]
    assert groups["hermes.plugins"] == declared["hermes.plugins"]
    assert groups["hermes.early"] == declared["hermes.early"]


def test_the_sdist_holds_the_sources_and_the_project_files(built: Built) -> None:
    assert built.sdist.name == f"hermes_kernel-{hermes_core.__version__}.tar.gz"
    top = built.sdist.name.removesuffix(".tar.gz")
    with tarfile.open(built.sdist) as archive:
        names = {name.removeprefix(top + "/") for name in archive.getnames()}
    wanted = sorted(package_files(built.source).values())
    missing = [path for path in [*wanted, "pyproject.toml", "README.md"] if path not in names]
    assert not missing, f"the sdist lacks {missing}"
