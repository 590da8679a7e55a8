"""Start-up: health, the generated key, the bind guard, weak keys, --show-key
(docs/reference/api-server.md#start-up-and-settings, #health-and-models; checks 1, 3, 4)."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
from pathlib import Path

from tests.api.api_helpers import HERMES, Server, assert_error, call, clean_env, start_server


async def test_health_probes_need_no_key_and_detailed_does(server: Server) -> None:
    for path in ("/health", "/v1/health"):
        reply = await call(server, "GET", path, auth=False)
        assert reply.status == 200
        assert reply.json["status"] == "ok"
        assert reply.json["platform"] == "hermes-agent"
        assert reply.json["version"]
    head = await call(server, "HEAD", "/health", auth=False)
    assert head.status == 200
    assert_error(await call(server, "GET", "/health/detailed", auth=False), 401, "invalid_api_key")
    detailed = await call(server, "GET", "/health/detailed")
    assert detailed.status == 200
    body = detailed.json
    assert body["status"] == "ok"
    assert set(body["readiness"]["checks"]) >= {"storage", "default_model", "event_loop"}
    assert body["api_server"]["port"] == server.port


async def test_first_start_creates_a_private_key_file_and_restart_reuses_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    srv = start_server(home)
    try:
        key_file = home / "api_server.key"
        assert stat.S_IMODE(os.stat(key_file).st_mode) == 0o600
        key = key_file.read_text().strip()
        assert key.startswith("hk_") and len(key) > 40
        log = "".join(srv.log)
        assert str(key_file) in log
        assert key not in log
        assert (await call(srv, "GET", "/v1/models")).status == 200
    finally:
        srv.stop()
    again = start_server(home)
    try:
        assert key_file.read_text().strip() == key
        assert (await call(again, "GET", "/v1/models", auth=f"Bearer {key}")).status == 200
        assert key not in "".join(again.log)
    finally:
        again.stop()


def _run(home: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [HERMES, "api", *args],
        env=clean_env(home, env),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def test_non_loopback_bind_without_a_configured_key_is_refused(tmp_path: Path) -> None:
    port = _free_port()
    (tmp_path / "api_server.key").parent.mkdir(parents=True, exist_ok=True)
    result = _run(tmp_path, "--host", "0.0.0.0", "--port", str(port))
    assert result.returncode != 0
    assert "Refusing to listen on 0.0.0.0" in result.stderr
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0


def test_a_short_configured_key_is_refused(tmp_path: Path) -> None:
    result = _run(tmp_path, "--port", "0", env={"API_SERVER_KEY": "short123"})
    assert result.returncode == 2
    assert "16 characters" in result.stderr
    result = _run(tmp_path, "--port", "0", env={"API_SERVER_KEY": "a" * 20})
    assert result.returncode == 2


def test_a_group_readable_key_file_is_refused(tmp_path: Path) -> None:
    key_file = tmp_path / "api_server.key"
    key_file.write_text("hk_" + "x1y2" * 10)
    os.chmod(key_file, 0o644)
    result = _run(tmp_path, "--port", "0")
    assert result.returncode == 2
    assert "chmod 600" in result.stderr


def test_show_key_prints_the_key_and_does_not_listen(tmp_path: Path) -> None:
    result = _run(tmp_path, "--show-key")
    assert result.returncode == 0
    key = result.stdout.strip()
    assert key == (tmp_path / "api_server.key").read_text().strip()
    configured = "k3y-" + "abcdefgh" * 3
    result = _run(tmp_path, "--show-key", env={"API_SERVER_KEY": configured})
    assert result.stdout.strip() == configured


def test_a_malformed_port_is_a_start_up_error(tmp_path: Path) -> None:
    result = _run(tmp_path, env={"API_SERVER_PORT": "eighty"})
    assert result.returncode == 2
    assert "port" in result.stderr


def test_a_busy_port_exits_1_with_a_message(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = _run(tmp_path, "--port", str(port))
    assert result.returncode == 1
    assert f"port {port} is already in use" in result.stderr


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_sigterm_drains_and_exits_zero(tmp_path: Path) -> None:
    srv = start_server(tmp_path / "h")
    assert srv.stop() == 0


async def test_access_log_names_the_request_but_never_the_key(tmp_path: Path) -> None:
    srv = start_server(tmp_path / "h")
    try:
        body = {"messages": [{"role": "user", "content": "a private transcript line"}]}
        assert (await call(srv, "POST", "/v1/chat/completions", body)).status == 200
        await call(srv, "GET", "/v1/models", auth=False)
    finally:
        srv.stop()
    log = "".join(srv.log)
    assert "POST /v1/chat/completions 200" in log
    assert "GET /v1/models 401" in log
    assert srv.key not in log
    assert "private transcript" not in log


def test_bad_api_server_settings_stop_start_up(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("[api_server]\nbogus = 1\n")
    result = _run(tmp_path, "--port", "0")
    assert result.returncode == 2 and "bogus" in result.stderr
    (tmp_path / "config.toml").write_text('[api_server]\nmodel_aliases = { fast = "nope:nothing" }\n')
    result = _run(tmp_path, "--port", "0")
    assert result.returncode == 2 and "model_aliases.fast" in result.stderr
    (tmp_path / "config.toml").write_text('[api_server]\nmodel_aliases = { hermes-agent = "mock:alt" }\n')
    result = _run(tmp_path, "--port", "0")
    assert result.returncode == 2 and "model_aliases" in result.stderr
