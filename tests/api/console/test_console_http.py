"""The console's auth rules over plain HTTP (docs/console.md#security-model): the cookie, CSRF,
origins, cross-key isolation, sign-out, expiry and key rotation."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any

import pytest

from tests.api.api_helpers import Server, assert_error, call, parse_sse, start_server
from tests.api.conftest import BASE_CONFIG
from tests.api.console.helpers import KEY_A, KEY_B, TWO_KEYS, Console, open_console
from tests.timing import eventually, scaled

MakeServer = Callable[..., Server]
Pair = tuple[Console, Console]
GUARDED = '[[tool terminal {"command":"hermes-guard-test"}]] please'


@pytest.fixture
async def console_server(make_server: MakeServer) -> Server:
    return make_server(TWO_KEYS)


@pytest.fixture
async def consoles(console_server: Server) -> AsyncIterator[tuple[Console, Console]]:
    a, b = open_console(console_server), open_console(console_server)
    assert (await a.sign_in(KEY_A)).status == 200
    assert (await b.sign_in(KEY_B)).status == 200
    yield a, b
    await a.client.close()
    await b.client.close()


async def test_console_is_off_by_default(server: Server) -> None:
    for path in ("/console", "/console/api/session", "/console/static/app.js"):
        assert_error(await call(server, "GET", path), 404, "not_found")
    assert not any("Console:" in line for line in server.log)


async def test_flag_and_setting_turn_it_on_and_print_the_url(make_server: MakeServer) -> None:
    by_flag = make_server("", "--console")
    by_config = make_server("[api_server]\nconsole = true\n")
    for srv in (by_flag, by_config):
        page = await call(srv, "GET", "/console", auth=False)
        assert page.status == 200 and page.headers["Content-Type"].startswith("text/html")
        assert "script-src 'self'" in page.headers["Content-Security-Policy"]

        async def banner(srv: Server = srv) -> bool:
            return any(f"Console: http://127.0.0.1:{srv.port}/console" in line for line in srv.log)

        await eventually(banner, what="the console URL in the banner")


async def test_sign_in_sets_a_strict_http_only_cookie_scoped_to_the_console(console_server: Server) -> None:
    c = open_console(console_server)
    try:
        wrong = await c.sign_in("hk_not_a_key_of_this_server_000")
        assert_error(wrong, 401, "invalid_api_key")
        assert "Set-Cookie" not in wrong.headers
        assert_error(await c.request("POST", "/console/api/session", {}), 400, "invalid_value")
        ok = await c.sign_in(KEY_A)
        assert ok.status == 200
        assert KEY_A not in ok.text
        raw = ok.headers["Set-Cookie"]
        morsel = SimpleCookie(raw)["hermes_console"]
        assert morsel["httponly"] is True
        assert morsel["samesite"] == "Strict"
        assert morsel["path"] == "/console"
        assert morsel["max-age"] == "3600"
        assert KEY_A not in morsel.value
        me = await c.request("GET", "/console/api/session")
        assert me.status == 200 and me.json["csrf_token"] == c.csrf
    finally:
        await c.client.close()


async def test_no_cookie_is_401_on_every_console_api_route(console_server: Server) -> None:
    # A bearer key does not open the console API: the cookie is its only credential.
    routes = [
        ("GET", "/console/api/session"),
        ("GET", "/console/api/runs"),
        ("POST", "/console/api/runs"),
        ("GET", "/console/api/model/options"),
        ("GET", "/console/api/runs/run_x"),
        ("GET", "/console/api/runs/run_x/events"),
        ("POST", "/console/api/runs/run_x/approval"),
        ("POST", "/console/api/runs/run_x/steer"),
        ("POST", "/console/api/runs/run_x/stop"),
        ("DELETE", "/console/api/session"),
    ]
    for method, path in routes:
        reply = await call(console_server, method, path, {"input": "x"}, auth=f"Bearer {KEY_A}")
        assert_error(reply, 401, "console_signed_out")


async def test_state_changing_calls_need_the_csrf_token(consoles: tuple[Console, Console]) -> None:
    a, _ = consoles
    for csrf in (False, "wrong-token"):
        reply = await a.request("POST", "/console/api/runs", {"input": "hi"}, csrf=csrf)
        assert_error(reply, 403, "csrf_failed")
    assert (await a.request("GET", "/console/api/runs")).json["data"] == []
    run_id = await a.start(GUARDED)
    frames = await _until_event(a, run_id, "approval.request")
    request_id = frames[-1]["data"]["request_id"]
    for path, body in (
        ("approval", {"choice": "once", "request_id": request_id}),
        ("steer", {"input": "x"}),
        ("stop", None),
    ):
        reply = await a.request("POST", f"/console/api/runs/{run_id}/{path}", body, csrf="nope")
        assert_error(reply, 403, "csrf_failed")
    assert_error(await a.request("DELETE", "/console/api/session", csrf=False), 403, "csrf_failed")
    answered = await a.request(
        "POST", f"/console/api/runs/{run_id}/approval", {"choice": "deny", "request_id": request_id}
    )
    assert answered.status == 200, answered.text
    names = [f["data"]["event"] for f in await a.events(run_id)]
    assert names[-1] == "run.completed" and "approval.responded" in names


async def test_other_origins_are_refused_even_with_cookie_and_token(consoles: Pair) -> None:
    a, _ = consoles
    evil = {"Origin": "http://evil.example"}
    refused = await a.request("POST", "/console/api/runs", {"input": "hi"}, **evil)
    assert_error(refused, 403, "origin_not_allowed")
    assert_error(await a.request("GET", "/console/api/runs", **evil), 403, "origin_not_allowed")
    same = {"Origin": a.server.base}
    assert (await a.request("GET", "/console/api/runs", **same)).status == 200


async def test_a_second_key_cannot_see_or_touch_the_first_keys_runs(consoles: Pair) -> None:
    a, b = consoles
    run_id = await a.start(GUARDED)
    await _until_event(a, run_id, "approval.request")
    assert [r["run_id"] for r in (await a.request("GET", "/console/api/runs")).json["data"]] == [run_id]
    assert (await b.request("GET", "/console/api/runs")).json["data"] == []
    for method, path, body in (
        ("GET", "", None),
        ("GET", "/events", None),
        ("POST", "/approval", {"choice": "once"}),
        ("POST", "/steer", {"input": "x"}),
        ("POST", "/stop", None),
    ):
        reply = await b.request(method, f"/console/api/runs/{run_id}{path}", body)
        assert_error(reply, 404, "run_not_found")
    # The cookie grants what its key grants: the same run through /v1 with key A.
    status = await call(a.server, "GET", f"/v1/runs/{run_id}", auth=f"Bearer {KEY_A}")
    assert status.json["status"] == "waiting_for_approval"
    assert (await a.request("POST", f"/console/api/runs/{run_id}/stop")).status == 200


async def test_events_resume_from_last_event_id_without_gap_or_duplicate(consoles: Pair) -> None:
    a, _ = consoles
    run_id = await a.start("[[tokens 40]] [[delay 5]] go")
    everything = await a.events(run_id)
    seqs = [int(f["id"]) for f in everything]
    assert seqs == list(range(1, len(seqs) + 1))
    cut = len(seqs) // 2
    rest = await a.events(run_id, **{"Last-Event-ID": str(cut)})
    assert [int(f["id"]) for f in rest] == seqs[cut:]
    assert rest == everything[cut:]


async def test_sign_out_ends_the_session(consoles: tuple[Console, Console]) -> None:
    a, b = consoles
    out = await a.request("DELETE", "/console/api/session")
    assert out.status == 200
    cleared = SimpleCookie(out.headers["Set-Cookie"])["hermes_console"]
    assert cleared.value == "" and cleared["path"] == "/console"
    assert_error(await a.request("GET", "/console/api/runs"), 401, "console_signed_out")
    assert (await b.request("GET", "/console/api/runs")).status == 200


async def test_sessions_are_short_lived(make_server: MakeServer) -> None:
    srv = make_server(TWO_KEYS + "console_session_ttl_s = 1\n")
    c = open_console(srv)
    try:
        ok = await c.sign_in(KEY_A)
        cookie = SimpleCookie(ok.headers["Set-Cookie"])["hermes_console"]
        assert cookie["max-age"] == "1"
        # The server ends the session itself, even for a client that keeps sending the cookie.
        sent = {"Cookie": f"hermes_console={cookie.value}"}
        assert (await call(srv, "GET", "/console/api/runs", headers=sent, auth=False)).status == 200

        async def expired() -> bool:
            reply = await call(srv, "GET", "/console/api/runs", headers=sent, auth=False)
            return reply.status == 401

        await eventually(expired, timeout=10, interval=0.2, what="the session to expire")
    finally:
        await c.client.close()


async def test_key_rotation_ends_console_sessions(tmp_path: Path) -> None:
    home = tmp_path / "home"
    first = start_server(home, config=f'[api_server]\nconsole = true\nkey = "{KEY_A}"\n' + BASE_CONFIG)
    c = open_console(first)
    try:
        assert (await c.sign_in(KEY_A)).status == 200
        first.stop()
        rotated = f'[api_server]\nconsole = true\nkey = "{KEY_B}"\n' + BASE_CONFIG
        second = start_server(home, config=rotated)  # cookies ignore the port
        try:
            c.server = second
            assert_error(await c.request("GET", "/console/api/runs"), 401, "console_signed_out")
            assert_error(await c.sign_in(KEY_A), 401, "invalid_api_key")
            assert (await c.sign_in(KEY_B)).status == 200
        finally:
            second.stop()
    finally:
        await c.client.close()


async def test_a_restart_keeps_console_sessions_and_a_sign_out_is_kept_too(tmp_path: Path) -> None:
    home = tmp_path / "home"
    config = f'[api_server]\nconsole = true\nkey = "{KEY_A}"\n' + BASE_CONFIG
    first = start_server(home, config=config)
    c, late = open_console(first), open_console(first)
    try:
        assert (await c.sign_in(KEY_A)).status == 200
        assert (await late.sign_in(KEY_A)).status == 200
        first.stop()
        second = start_server(home, config=config)  # cookies ignore the port
        try:
            c.server = late.server = second
            assert (await c.request("GET", "/console/api/runs")).status == 200
            assert (await c.request("POST", "/console/api/runs", {"input": "still here"})).status == 202
            kept = next(m.value for m in late.client.cookie_jar if m.key == "hermes_console")
            assert (await late.request("DELETE", "/console/api/session")).status == 200
        finally:
            second.stop()
        third = start_server(home, config=config)
        try:
            c.server = late.server = third
            assert (await c.request("GET", "/console/api/runs")).status == 200
            sent = {"Cookie": f"hermes_console={kept}"}  # whoever keeps sending the old cookie
            gone = await call(third, "GET", "/console/api/runs", headers=sent, auth=False)
            assert_error(gone, 401, "console_signed_out")
        finally:
            third.stop()
    finally:
        await c.client.close()
        await late.client.close()


async def test_served_assets_fit_the_budget_and_load_nothing_from_elsewhere(console_server: Server) -> None:
    from hermes_api_server.console.routes import ASSETS, asset_sizes

    total = 0
    page = await call(console_server, "GET", "/console/runs/run_abc", auth=False)
    assert page.status == 200
    total += len(page.text.encode())
    for name in ASSETS:
        reply = await call(console_server, "GET", f"/console/static/{name}", auth=False)
        assert reply.status == 200, name
        assert "http://" not in reply.text.replace("http://www.w3.org/2000/svg", "")
        assert "innerHTML" not in reply.text and "eval(" not in reply.text
        total += len(reply.text.encode())
    assert total == sum(asset_sizes().values())
    assert total <= 150 * 1024, total
    outside = await call(console_server, "GET", "/console/static/..%2Froutes.py", auth=False)
    assert_error(outside, 404, "not_found")


async def _until_event(c: Console, run_id: str, name: str) -> list[dict[str, Any]]:
    """Read the run's live stream until event ``name`` arrives; return the frames so far."""
    frames: list[dict[str, Any]] = []
    buffer = ""
    async with c.client.get(f"{c.server.base}/console/api/runs/{run_id}/events") as resp:
        assert resp.status == 200
        async with asyncio.timeout(scaled(15)):
            async for chunk in resp.content.iter_any():
                buffer += chunk.decode()
                while "\n\n" in buffer:
                    block, buffer = buffer.split("\n\n", 1)
                    frames += [f for f in parse_sse(block + "\n\n") if "data" in f]
                    if frames and frames[-1]["data"]["event"] == name:
                        return frames
    raise AssertionError(f"the stream ended without {name}")
