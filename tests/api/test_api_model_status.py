"""The one "no model configured" rule as ``hermes api`` reports it: at start and in /health/detailed."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from tests.api.api_helpers import Server, call, start_server


async def log_with(srv: Server, text: str, timeout: float = 20) -> str:
    """Wait until the server's stderr holds ``text``; return all of it."""
    deadline = time.monotonic() + timeout
    while text not in "".join(srv.log) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    return "".join(srv.log)


async def test_no_model_configured_is_the_announced_fallback(tmp_path: Path) -> None:
    srv = start_server(tmp_path / "home", config="")
    try:
        detailed = await call(srv, "GET", "/health/detailed")
        assert detailed.status == 200
        body = detailed.json
        assert body["status"] == "ok"
        assert body["readiness"]["checks"]["default_model"] == {
            "ok": True,
            "model": "mock:echo",
            "source": "fallback",
            "warning": "no model configured: the offline mock model only echoes",
        }
        log = await log_with(srv, "no model configured")
        assert log.count("no model configured") == 1 and "mock:echo" in log
    finally:
        srv.stop()


async def test_a_provider_without_its_key_is_reported_at_start_and_degrades_health(tmp_path: Path) -> None:
    srv = start_server(tmp_path / "home", config='model = "openai:gpt-4.1"\n')
    try:
        # Reported before any request reaches the model.
        log = await log_with(srv, "cannot answer yet")
        assert "model openai:gpt-4.1 cannot answer yet: provider 'openai' has no API key" in log
        assert "OPENAI_API_KEY" in log
        detailed = await call(srv, "GET", "/health/detailed")
        assert detailed.status == 200
        body = detailed.json
        assert body["status"] == "degraded"
        check = body["readiness"]["checks"]["default_model"]
        assert check["ok"] is False and check["model"] == "openai:gpt-4.1" and check["source"] == "config"
        assert "OPENAI_API_KEY" in check["error"]
    finally:
        srv.stop()


async def test_a_configured_model_with_its_key_is_ok(tmp_path: Path) -> None:
    srv = start_server(
        tmp_path / "home", config='model = "openai:gpt-4.1"\n', env={"OPENAI_API_KEY": "sk-not-real-123"}
    )
    try:
        check = (await call(srv, "GET", "/health/detailed")).json["readiness"]["checks"]["default_model"]
        assert check == {"ok": True, "model": "openai:gpt-4.1", "source": "config"}
        assert "sk-not-real-123" not in "".join(srv.log)
    finally:
        srv.stop()
