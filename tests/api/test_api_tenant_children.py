"""The child sessions a tenant's run delegates to are the tenant's on a real ``hermes api``
(docs/reference/api-server.md#tenants): its keys continue them, a configured key or another
tenant gets ``session_not_found``, as for any session of another tenant."""

from __future__ import annotations

import json
from typing import Any

from tests.api.api_helpers import Server, assert_error, call, parse_sse
from tests.api.test_api_scoped_keys import http_key, wait_status_as

DELEGATE = f"[[tool delegate_task {json.dumps({'goal': 'child work [[tokens 2]]'})}]]"


async def test_a_delegated_child_session_is_the_runs_tenants(make_server: Any) -> None:
    srv: Server = make_server()
    acme = f"Bearer {(await http_key(srv, 'acme', ['observe', 'control']))['secret']}"
    globex = f"Bearer {(await http_key(srv, 'globex', ['observe', 'control']))['secret']}"
    run = await call(srv, "POST", "/v1/runs", {"input": DELEGATE}, auth=acme)
    assert run.status == 202, run.text
    await wait_status_as(srv, run.json["run_id"], acme)
    reply = await call(srv, "GET", f"/v1/runs/{run.json['run_id']}/events", auth=acme)
    frames = [f["data"] for f in parse_sse(reply.text) if "data" in f]
    [child] = {f["subagent_id"] for f in frames if f["event"] == "subagent.start"}
    assert child != run.json["session_id"]
    # Neither a configured key (the default tenant) nor globex may continue acme's child session...
    for auth in (f"Bearer {srv.key}", globex):
        taken = await call(srv, "POST", "/v1/runs", {"input": "peek", "session_id": child}, auth=auth)
        assert_error(taken, 404, "session_not_found")
    # ... and acme may.
    mine = await call(srv, "POST", "/v1/runs", {"input": "more", "session_id": child}, auth=acme)
    assert mine.status == 202, mine.text
    assert mine.json["session_id"] == child
    await wait_status_as(srv, mine.json["run_id"], acme)
