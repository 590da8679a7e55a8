"""On PostgreSQL storage, a tenant's new stateless chat is claimed for its tenant while its first
model call goes out (docs/reference/api-server.md#tenants): a claim the database refuses ends the
request with the error a failed open gave, with nothing stored and no claim; the next one works
and is the tenant's only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg

from tests.api.api_helpers import assert_error, call, start_server
from tests.api.test_api_first_write import _calls
from tests.api.test_api_scoped_keys import http_key
from tests.postgres.test_pg_api import CONFIG
from tests.providers.upstream_fakes import FakeUpstream
from tests.providers.vendors import OPENAI

REFUSE = """
CREATE FUNCTION test_refuse_claim() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_sleep(0.2);
    RAISE EXCEPTION 'claim refused by the test';
END $$;
CREATE TRIGGER test_claim BEFORE INSERT ON hermes_records FOR EACH ROW
    WHEN (NEW.namespace = 'api.session_owners') EXECUTE FUNCTION test_refuse_claim();
"""


async def _one(dsn: str, sql: str) -> Any:
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        cur = await conn.execute(sql)
        return await cur.fetchall() if cur.description else None


def _chat(text: str) -> dict[str, Any]:
    return {"model": "hermes-agent", "messages": [{"role": "user", "content": text}]}


async def test_a_refused_claim_stores_nothing_and_a_tenants_chat_stays_its_own(
    tmp_path: Path, pg_dsn: str
) -> None:
    async with FakeUpstream() as up:
        up.replies(OPENAI.chat_path, [OPENAI.reply("Never shown."), OPENAI.reply("Fine.")])
        config = (
            f'model = "openai:{OPENAI.model}"\n{CONFIG}'
            f'[providers.openai]\napi_key = "{OPENAI.key}"\nbase_url = "{OPENAI.root(up.url)}"\n'
        )
        server = start_server(tmp_path / "home", config=config, env={"HERMES_POSTGRES_DSN": pg_dsn})
        try:
            await _scenario(server, pg_dsn, up)
        finally:
            server.stop()


async def _scenario(server: Any, pg_dsn: str, up: FakeUpstream) -> None:
    acme = f"Bearer {(await http_key(server, 'acme', ['observe', 'control']))['secret']}"
    globex = f"Bearer {(await http_key(server, 'globex', ['observe', 'control']))['secret']}"
    await _one(pg_dsn, REFUSE)
    refused = await call(server, "POST", "/v1/chat/completions", _chat("first words"), auth=acme)
    assert refused.status == 500, refused.text
    assert refused.json["error"]["code"] == "internal_error"
    assert "X-Hermes-Session-Id" not in refused.headers
    # The call went out while the claim was being stored (and was dropped unread).
    assert _calls(up)[0].body["messages"][-1] == {"role": "user", "content": "first words"}
    assert await _one(pg_dsn, "SELECT count(*) FROM hermes_sessions") == [(0,)]
    assert await _one(pg_dsn, "SELECT count(*) FROM hermes_messages") == [(0,)]
    owners = "SELECT key, owner FROM hermes_records WHERE namespace = 'api.session_owners'"
    assert await _one(pg_dsn, owners) == []

    await _one(pg_dsn, "DROP TRIGGER test_claim ON hermes_records")
    done = await call(server, "POST", "/v1/chat/completions", _chat("second try"), auth=acme)
    assert done.status == 200, done.text
    assert done.json["choices"][0]["message"]["content"] == "Fine."
    session_id = done.headers["X-Hermes-Session-Id"]
    assert await _one(pg_dsn, owners) == [(session_id, "tenant:acme")]
    for auth in (globex, f"Bearer {server.key}"):
        taken = await call(
            server,
            "POST",
            "/v1/chat/completions",
            _chat("peek"),
            auth=auth,
            headers={"X-Hermes-Session-Id": session_id},
        )
        assert_error(taken, 404, "session_not_found")
