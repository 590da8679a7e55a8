"""The plugin declaration: cheap to import, a server backend with its environment variable."""

from __future__ import annotations

import subprocess
import sys

from hermes_postgres.plugin import DSN_VARIABLE, hermes_storage_backends, make_storage


def test_the_plugin_declares_a_server_backend_read_from_hermes_postgres_dsn() -> None:
    spec = hermes_storage_backends()
    assert (spec.name, spec.kind, dict(spec.env)) == ("postgres", "server", {"dsn": DSN_VARIABLE})
    built = make_storage(dsn="postgresql://u:pw@db.example:6543/hermes", pool_size=3, pool_timeout_s=2.5)
    assert (built.server, built.pool_size, built.pool_timeout_s) == ("db.example:6543/hermes", 3, 2.5)


def test_importing_the_plugin_module_loads_no_driver() -> None:
    code = (
        "import sys, hermes_postgres.plugin\n"
        "heavy = [m for m in ('psycopg', 'psycopg_pool', 'hermes_postgres.store') if m in sys.modules]\n"
        "print(heavy)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "[]", done.stderr
