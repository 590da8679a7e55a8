"""Stored keys on ``hermes tui --ws`` (docs/protocols/tui-gateway.md#1-starting-the-gateway): a key
of the default tenant connects, its scopes decide each method (4031 with the scope it lacks), and
revoking it with ``hermes keys revoke`` closes its socket with 4401 within a second."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from tests.api.test_api_scoped_keys import cli_key, hermes_keys
from tests.timing import scaled
from tests.tui.client import RpcFailure, WsClient, WsServer, write_config


async def test_a_stored_key_is_scoped_and_its_revocation_closes_the_socket(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write_config(home)
    secret, key_id = cli_key(home, "default", "observe")
    srv = WsServer(home, "ws-keys-token-0123456789abcdef")
    try:
        for how in (
            {"headers": {"Authorization": f"Bearer {secret}"}},
            {"protocols": ("hermes.v1", f"hermes.token.{secret}")},
        ):
            client = await WsClient.connect(srv.url, **how)
            await client.wait(lambda c=client: c.frames)
            assert (await client.call("session.list", {}))["sessions"] is not None
            with pytest.raises(RpcFailure) as refused:
                await client.call("session.create", {})
            assert refused.value.code == 4031
            assert refused.value.data == {"method": "session.create", "required_scope": "control"}
            await client.close()
        client = await WsClient.connect(srv.url, headers={"Authorization": f"Bearer {secret}"})
        await client.wait(lambda: client.frames)
        token = await WsClient.connect(srv.url, headers={"Authorization": f"Bearer {srv.token}"})
        await token.wait(lambda: token.frames)
        done = await asyncio.to_thread(hermes_keys, home, "revoke", key_id)
        assert done.returncode == 0, done.stderr
        revoked_at = time.monotonic()
        assert await client.wait_closed(timeout=scaled(1.0)) == 4401
        assert time.monotonic() - revoked_at <= scaled(1.0)
        assert "sessions" in await token.call("session.list", {})  # the gateway's token is unaffected
        await token.close()
        await client.close()
        again = await WsClient.connect(srv.url, headers={"Authorization": f"Bearer {secret}"})
        assert await again.wait_closed() == 4401
        await again.close()
    finally:
        srv.stop()
