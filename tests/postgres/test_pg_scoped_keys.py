"""Scoped keys on shared PostgreSQL storage: two real ``hermes api`` instances honour a key made by
the CLI, share the tenant's records, and refuse a revoked key within 1 s, whether it was revoked
with ``hermes keys revoke`` or on the other instance's ``DELETE /v1/keys/{id}``
(docs/reference/api-server.md#scoped-keys)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from tests.api.api_helpers import Server, call, start_server
from tests.api.test_api_scoped_keys import cli_key, hermes_keys
from tests.postgres.test_pg_api import CONFIG
from tests.timing import eventually, scaled

ADMIN = "hk_pg-shared-admin-key-0123456789"


def _pair(tmp_path: Path, pg_dsn: str) -> tuple[Server, Server]:
    env = {"HERMES_POSTGRES_DSN": pg_dsn, "API_SERVER_KEY": ADMIN}
    return (
        start_server(tmp_path / "a", config=CONFIG, env=env),
        start_server(tmp_path / "b", config=CONFIG, env=env),
    )


async def _refused_within_one_second(servers: tuple[Server, ...], bearer: str, revoked_at: float) -> None:
    async def refused() -> bool:
        answers = await asyncio.gather(*(call(s, "GET", "/v1/runs", auth=bearer) for s in servers))
        return all(a.status == 401 for a in answers)

    await eventually(refused, timeout=1.0, interval=0.02, what="every instance refusing the revoked key")
    assert time.monotonic() - revoked_at <= scaled(1.0)


async def test_a_revocation_reaches_every_instance_within_a_second(tmp_path: Path, pg_dsn: str) -> None:
    a, b = _pair(tmp_path, pg_dsn)
    try:
        env = {"HERMES_POSTGRES_DSN": pg_dsn}
        (tmp_path / "cli").mkdir()
        (tmp_path / "cli" / "config.toml").write_text(CONFIG, encoding="utf-8")
        secret, key_id = cli_key(tmp_path / "cli", "acme", "observe,control", env=env)
        bearer = f"Bearer {secret}"
        # Made on A, read on B: the tenant's records are shared.
        made = await call(a, "POST", "/v1/responses", {"input": "shared"}, auth=bearer)
        assert made.status == 200, made.text
        assert (await call(b, "GET", f"/v1/responses/{made.json['id']}", auth=bearer)).status == 200
        assert (await call(b, "GET", f"/v1/responses/{made.json['id']}")).status == 404  # admin of default
        # Both instances have the key freshly verified (cached) right before it is revoked.
        for server in (a, b):
            assert (await call(server, "GET", "/v1/runs", auth=bearer)).status == 200
        done = await asyncio.to_thread(hermes_keys, tmp_path / "cli", "revoke", key_id, env=env)
        assert done.returncode == 0, done.stderr
        await _refused_within_one_second((a, b), bearer, time.monotonic())

        # Revoked through the admin endpoint of A: B refuses it within a second too.
        other = await call(
            a, "POST", "/v1/keys", {"tenant": "acme", "scopes": ["observe"]}, auth=f"Bearer {ADMIN}"
        )
        bearer = f"Bearer {other.json['secret']}"
        assert (await call(b, "GET", "/v1/runs", auth=bearer)).status == 200
        listed = await call(b, "GET", "/v1/keys?tenant=acme", auth=f"Bearer {ADMIN}")
        assert [k["id"] for k in listed.json["data"]] == [other.json["id"]]
        gone = await call(a, "DELETE", f"/v1/keys/{other.json['id']}", auth=f"Bearer {ADMIN}")
        assert gone.status == 200
        await _refused_within_one_second((a, b), bearer, time.monotonic())
    finally:
        a.stop()
        b.stop()
