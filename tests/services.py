"""Where the system services the tests use are (PostgreSQL, Redis, nginx), from the environment.

``.ci/run`` starts them and exports ``HERMES_TEST_POSTGRES_DSN``, ``HERMES_TEST_REDIS_URL`` and
``HERMES_TEST_NGINX``. Without them a test that needs one is skipped with one line saying how to
enable it; with ``CI=true`` a missing service fails the test instead.
"""

from __future__ import annotations

import os

import pytest

ENABLE = "run .ci/run, or start the service and export {var} (see .ci/services/)"


def _required(var: str, what: str) -> str:
    value = os.environ.get(var, "").strip()
    if value:
        return value
    message = f"{what} not available: {ENABLE.format(var=var)}"
    if os.environ.get("CI", "").strip().lower() == "true":
        pytest.fail(f"CI=true but {message}", pytrace=False)
    pytest.skip(message)


def postgres_dsn() -> str:
    """Return the test server's DSN, or skip (fail under CI) when there is none."""
    return _required("HERMES_TEST_POSTGRES_DSN", "PostgreSQL")


def redis_url() -> str:
    """Return the test Redis URL, or skip (fail under CI) when there is none."""
    return _required("HERMES_TEST_REDIS_URL", "Redis")


def nginx_binary() -> str:
    """Return the nginx binary, or skip (fail under CI) when there is none."""
    return _required("HERMES_TEST_NGINX", "nginx")


def redis_server_binary() -> str:
    """Return ``redis-server`` (the fault tests start a Redis of their own to restart it), or skip
    (fail under CI) when it is not on PATH."""
    import shutil

    redis_url()
    binary = shutil.which("redis-server")
    if binary:
        return binary
    message = "redis-server not on PATH: install Redis (see .ci/services/) to run the run-bus fault tests"
    if os.environ.get("CI", "").strip().lower() == "true":
        pytest.fail(f"CI=true but {message}", pytrace=False)
    pytest.skip(message)
