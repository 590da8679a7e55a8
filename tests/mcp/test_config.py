"""Reading ``[mcp_servers.NAME]`` and ACP ``mcpServers`` entries; the names tools get."""

from __future__ import annotations

import pytest

from hermes_core import InvalidValue
from hermes_mcp.config import from_acp, from_settings
from hermes_mcp.naming import tool_name


def test_tool_names_are_safe_and_at_most_64_characters() -> None:
    assert tool_name("tiny", "add") == "mcp_tiny_add"
    assert tool_name("my.server-1", "get-sum") == "mcp_my_server_1_get_sum"
    long_a, long_b = tool_name("s", "x" * 80), tool_name("s", "x" * 79 + "y")
    assert len(long_a) == len(long_b) == 64 and long_a != long_b
    assert long_a.startswith("mcp_s_xxx") and long_a[-9] == "_"
    assert tool_name("s", "x" * 80) == long_a  # stable


def test_config_tables() -> None:
    servers, problems = from_settings(
        {
            "ok": {"command": "srv", "args": ["-v"], "env": {"A": "1"}, "timeout_s": 5, "include": ["a"]},
            "web": {"url": "https://example.test/mcp", "headers": {"Authorization": "x"}, "trust": "full"},
            "off": {"command": "srv", "enabled": False},
            "both": {"command": "x", "url": "http://y"},
            "typo": {"comand": "x"},
            "trust": {"command": "x", "trust": "some"},
            "slow": {"command": "x", "timeout_s": 0},
        }
    )
    assert [(s.name, s.transport, s.trust) for s in servers] == [
        ("ok", "stdio", "untrusted"),
        ("web", "http", "full"),
    ]
    assert servers[0].args == ("-v",) and servers[0].env == {"A": "1"} and servers[0].timeout_s == 5
    assert servers[0].wants("a") and not servers[0].wants("b")
    assert problems == [
        "mcp_servers.both: give either command (stdio) or url (streamable HTTP)",
        "mcp_servers.typo: unknown key(s) comand",
        "mcp_servers.trust.trust: expected 'full' or 'untrusted'",
        "mcp_servers.slow.timeout_s: expected a positive number of seconds",
    ]


def test_acp_entries() -> None:
    stdio = {"name": "a", "command": "srv", "args": ["x"], "env": [{"name": "K", "value": "v"}]}
    http = {
        "type": "http",
        "name": "b",
        "url": "http://127.0.0.1:1/mcp",
        "headers": [{"name": "H", "value": "1"}],
    }
    servers = from_acp([stdio, http], "sid")
    assert [(s.name, s.transport, s.session_id, s.trust) for s in servers] == [
        ("a", "stdio", "sid", "untrusted"),
        ("b", "http", "sid", "untrusted"),
    ]
    assert servers[0].env == {"K": "v"} and servers[1].headers == {"H": "1"}
    with pytest.raises(InvalidValue, match="duplicate server name 'a'"):
        from_acp([stdio, stdio], "sid")
    with pytest.raises(InvalidValue, match=r"already the name of a server in config\.toml"):
        from_acp([stdio], "sid", taken=frozenset({"a"}))
    with pytest.raises(InvalidValue, match="unsupported MCP transport 'sse'"):
        from_acp([{**http, "type": "sse"}], "sid")
    with pytest.raises(InvalidValue, match=r"mcpServers\[0\].env"):
        from_acp([{**stdio, "env": {"K": "v"}}], "sid")


def test_the_cli_model_knows_the_same_keys_and_defaults_as_the_reader() -> None:
    """``hermes config`` checks ``[mcp_servers.NAME]`` with ``ServerTable``; the servers are read
    by ``from_table``: both must agree on the keys and the defaults."""
    from hermes_mcp import config
    from hermes_mcp.settings import ServerTable

    assert set(ServerTable.model_fields) == config._KEYS
    table = ServerTable()
    server = config.from_table("x", {"command": "srv"})
    assert server is not None
    assert (table.timeout_s, table.connect_timeout_s) == (server.timeout_s, server.connect_timeout_s)
    assert (table.trust, table.enabled) == (server.trust, True)
