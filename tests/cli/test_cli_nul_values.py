"""A NUL character in a ``config.toml`` value (TOML can spell it ``\\u0000``) is a configuration error
naming the key, exit 2, before anything uses the value."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.cli_helpers import Hermes


@pytest.mark.parametrize(
    ("toml", "key"),
    [
        ('[storage]\npath = "/tmp/a\\u0000b.sqlite3"\n', "storage.path"),
        ('[mcp_servers.files]\ncommand = "npx"\ncwd = "/tmp/\\u0000"\n', "mcp_servers.files.cwd"),
        (
            '[[providers.custom]]\nname = "lab"\nbase_url = "http://h\\u0000/v1"\n',
            "providers.custom[0].base_url",
        ),
    ],
)
def test_a_nul_in_config_is_reported_with_its_key(hermes: Hermes, home: Path, toml: str, key: str) -> None:
    (home / "config.toml").write_text('model = "mock:echo"\n' + toml)
    for argv in (("run", "hi"), ("sessions", "list"), ("models",)):
        result = hermes(*argv)
        assert result.returncode == 2, (argv, result.stderr)
        assert f"{key} contains a NUL character" in result.stderr
        assert "ValueError" not in result.stderr and result.stdout == ""
