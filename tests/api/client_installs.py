"""Install the third-party clients the API tests run against our server, cached across checkouts.

Each client gets a place of its own so that it never touches the test environment: a venv
(``<name>/venv``) for a Python client, an npm prefix (``<name>/node_modules``) for a Node one.
The places live in ``.ci/clients/`` of the checkout (gitignored), or in
``$HERMES_TEST_CLIENT_CACHE`` when it is set, so that several checkouts on one machine share one
copy; ``.ci/clients/<name>`` then links to each. A finished install leaves a stamp naming what
was asked for and how long it took; the next run asking the same reuses it. An install that
cannot complete raises :class:`ClientUnavailable` with the installer's own words, and the test
decides what that means.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LINKS = REPO / ".ci" / "clients"
INSTALL_TIMEOUT_S = 1500


def cache_root() -> Path:
    """Return where installed clients are kept."""
    configured = os.environ.get("HERMES_TEST_CLIENT_CACHE")
    return Path(configured) if configured else LINKS


class ClientUnavailable(RuntimeError):
    """A client could not be installed here; the message says why."""


def _stamp(place: Path) -> Path:
    return place / ".hermes-installed.json"


def _done(place: Path, wanted: dict[str, object]) -> bool:
    try:
        stamp = json.loads(_stamp(place).read_text())
    except (OSError, ValueError):
        return False
    return bool(stamp.get("wanted") == wanted)


def install_seconds(name: str) -> float | None:
    """Return how long the cached install of ``name`` took, if it is installed."""
    try:
        return float(json.loads(_stamp(cache_root() / name).read_text())["seconds"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _fresh(name: str) -> Path:
    place = cache_root() / name
    shutil.rmtree(place, ignore_errors=True)
    place.mkdir(parents=True)
    return place


def _finish(name: str, place: Path, wanted: dict[str, object], started: float) -> None:
    _stamp(place).write_text(json.dumps({"wanted": wanted, "seconds": round(time.monotonic() - started, 1)}))
    _link(name, place)


def _link(name: str, place: Path) -> None:
    link = LINKS / name
    if link == place:  # installed in the checkout itself: nothing to link
        return
    if link.is_symlink() and link.resolve() == place.resolve():
        return
    LINKS.mkdir(parents=True, exist_ok=True)
    if link.is_symlink() or link.is_file():
        link.unlink()
    elif link.exists():
        shutil.rmtree(link)
    link.symlink_to(place, target_is_directory=True)


def _run(args: list[str], what: str, env: dict[str, str] | None = None) -> None:
    try:
        done = subprocess.run(
            args, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, env=env, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ClientUnavailable(f"{what}: {exc}") from None
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-15:]
        raise ClientUnavailable(f"{what} failed (exit {done.returncode}):\n" + "\n".join(tail))


def find_python(version: str) -> str:
    """Return an interpreter of ``version`` (``3.13``): ``$HERMES_TEST_PYTHON<digits>``, the PATH,
    or a pyenv install; raise :class:`ClientUnavailable` naming what to install."""
    variable = "HERMES_TEST_PYTHON" + version.replace(".", "")
    candidates = [os.environ.get(variable, ""), shutil.which(f"python{version}") or ""]
    root = os.environ.get("PYENV_ROOT", str(Path.home() / ".pyenv"))
    candidates += sorted(glob.glob(f"{root}/versions/{version}*/bin/python{version}"), reverse=True)
    for candidate in candidates:
        if not candidate:
            continue
        try:
            said = subprocess.run(
                [candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                capture_output=True,
                text=True,
                timeout=30,
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        if said.returncode == 0 and said.stdout.strip() == version:
            return candidate
    raise ClientUnavailable(
        f"Python {version} is needed (install python{version}, or point {variable} at one)"
    )


def python_client(name: str, *steps: list[str], python: str | None = None) -> Path:
    """Return the ``python`` of the venv ``name``, holding what each ``pip install`` step asked for.

    Steps run in order (``["torch==2.13.0"], ["open-webui==0.12.4"]`` puts the CPU build of torch
    in before anything can ask for another one).
    """
    place = cache_root() / name
    # The real interpreter, not this test venv's link to it: a fresh clone's venv has another path.
    interpreter = os.path.realpath(python or sys.executable)
    wanted: dict[str, object] = {"python": interpreter, "steps": [list(step) for step in steps]}
    exe = place / "venv" / "bin" / "python"
    if _done(place, wanted) and exe.exists():
        _link(name, place)
        return exe
    started = time.monotonic()
    place = _fresh(name)
    _run([interpreter, "-m", "venv", str(place / "venv")], f"creating the {name} venv")
    for step in steps:
        _run(
            [str(exe), "-m", "pip", "install", "-q", "--disable-pip-version-check", *step],
            f"pip install {' '.join(step)} into the {name} venv",
        )
    _finish(name, place, wanted, started)
    return exe


def npm_client(name: str, packages: list[str]) -> Path:
    """Return the npm prefix ``name`` holding ``packages`` (scripts placed there resolve them)."""
    place = cache_root() / name
    wanted: dict[str, object] = {"packages": packages}
    if _done(place, wanted) and (place / "node_modules").is_dir():
        _link(name, place)
        return place
    npm = shutil.which("npm")
    if not (npm and shutil.which("node")):
        raise ClientUnavailable(f"node and npm are needed to install {' '.join(packages)}")
    started = time.monotonic()
    place = _fresh(name)
    (place / "package.json").write_text('{"private": true}\n')
    quiet = ["--silent", "--no-audit", "--no-fund", "--no-save"]
    _run([npm, "install", *quiet, "--prefix", str(place), *packages], f"npm install {' '.join(packages)}")
    _finish(name, place, wanted, started)
    return place
