"""Browser control, opt-in: register, tickets, the WebSocket and a scripted controller (check 30)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import aiohttp

from tests.api.api_helpers import Server, assert_error, call

CONFIG = "[api_server.browser_control]\nenabled = true\n"


def registration(session_id: str, **extra: Any) -> dict[str, Any]:
    return {
        "protocol_version": 1,
        "session_id": session_id,
        "controller_id": "ctl-1",
        "browser_profile_id": "profile-1",
        "capabilities": ["browser_click", "controller.noop", "shell_exec"],
        **extra,
    }


async def test_register_checks_and_ticket_rules(make_server: Callable[..., Server]) -> None:
    srv = make_server(CONFIG)
    caps = (await call(srv, "GET", "/v1/capabilities")).json
    assert caps["features"]["browser_extension_control"]["enabled"] is True
    assert "browser_control_register" in caps["endpoints"]
    assert_error(
        await call(srv, "POST", "/v1/browser-control/register", registration("nope")),
        403,
        "browser_control_session_forbidden",
    )
    await call(
        srv,
        "POST",
        "/v1/chat/completions",
        {"messages": [{"role": "user", "content": "hi"}]},
        headers={"X-Hermes-Session-Id": "browse"},
    )
    assert_error(
        await call(
            srv, "POST", "/v1/browser-control/register", registration("browse", protocol_version=True)
        ),
        400,
        "browser_control_protocol_unsupported",
    )
    assert_error(
        await call(srv, "POST", "/v1/browser-control/register", registration("browse", controller_id="")),
        400,
        "browser_control_invalid_registration",
    )
    assert_error(
        await call(
            srv, "POST", "/v1/browser-control/register", registration("browse", capabilities=["browser_cdp"])
        ),
        403,
        "browser_control_developer_mode_required",
    )
    assert_error(
        await call(srv, "POST", "/v1/browser-control/register", registration("browse", capabilities=["x"])),
        400,
        "browser_control_no_capabilities",
    )
    made = await call(srv, "POST", "/v1/browser-control/register", registration("browse"))
    assert made.status == 201
    body = made.json
    assert body["scope"]["capabilities"] == ["browser_click", "controller.noop"]
    assert body["scope"]["transport_family"] == "local-api"
    assert body["ticket_expires_in_seconds"] == 30
    ws_url = srv.base + body["ws_path"]
    assert_error(
        await call(srv, "GET", f"/v1/browser-control/ws?ticket={body['ticket']}", auth=False),
        401,
        "browser_control_ticket_invalid",
    )
    assert_error(
        await call(srv, "GET", "/v1/browser-control/ws", auth=False), 401, "browser_control_ticket_invalid"
    )
    protocols = ("hermes-browser-control-v1", f"hermes-browser-control-ticket.{body['ticket']}")
    async with aiohttp.ClientSession() as client:
        async with client.ws_connect(ws_url, protocols=protocols) as ws:
            assert ws.protocol == "hermes-browser-control-v1"
            await ws.send_str(
                json.dumps({"method": "browser.controller.heartbeat", "params": {"nonce": "n1"}})
            )
            echo = json.loads((await ws.receive()).data)
            assert echo["params"] == {"nonce": "n1", "ok": True}
        try:
            async with client.ws_connect(ws_url, protocols=protocols):
                raise AssertionError("a used ticket must not connect")
        except aiohttp.WSServerHandshakeError as exc:
            assert exc.status == 401


async def test_scripted_controller_completes_browser_click(make_server: Callable[..., Server]) -> None:
    srv = make_server(CONFIG)
    headers = {"X-Hermes-Session-Id": "browse-2"}
    await call(
        srv,
        "POST",
        "/v1/chat/completions",
        {"messages": [{"role": "user", "content": "hi"}]},
        headers=headers,
    )
    ticket = (await call(srv, "POST", "/v1/browser-control/register", registration("browse-2"))).json[
        "ticket"
    ]
    seen: list[dict[str, Any]] = []
    async with aiohttp.ClientSession() as client:
        protocols = ("hermes-browser-control-v1", f"hermes-browser-control-ticket.{ticket}")
        async with client.ws_connect(srv.base + "/v1/browser-control/ws", protocols=protocols) as ws:

            async def controller() -> None:
                async for msg in ws:
                    frame = json.loads(msg.data)
                    seen.append(frame)
                    if frame["method"] == "browser.controller.command":
                        params = frame["params"]
                        result = {"command_id": params["command_id"], "ok": True, "result": "clicked #go"}
                        await ws.send_str(
                            json.dumps({"method": "browser.controller.result", "params": result})
                        )

            task = asyncio.create_task(controller())
            body = {
                "messages": [{"role": "user", "content": '[[tool browser_click {"selector":"#go"}]] click'}]
            }
            reply = await call(srv, "POST", "/v1/chat/completions", body, headers=headers)
            task.cancel()
    assert reply.json["choices"][0]["message"]["content"] == "Done: clicked #go"
    command = seen[0]["params"]
    assert command["action"] == "browser_click" and command["arguments"] == {"selector": "#go"}
    assert command["controller_id"] == "ctl-1" and command["tool_call_id"].startswith("tc_")
