"""``hermes models``: the KEY column tells "not needed" from "missing" (docs/writing-providers.md)."""

from __future__ import annotations

from pathlib import Path

from tests.cli.cli_helpers import Hermes


def key_column(stdout: str) -> dict[tuple[str, str], str]:
    """Return ``(provider, model) → KEY`` from the table, cut at the header's column offsets."""
    lines = stdout.splitlines()
    header = next(line for line in lines if "PROVIDER" in line and "KEY" in line)
    start, end = header.index("KEY"), header.index("PROBE")
    left, model_at = header.index("PROVIDER"), header.index("MODEL")
    rows = lines[lines.index(header) + 1 :]
    return {
        (row[left:model_at].strip(), row[model_at:].split()[0]): row[start:end].strip()
        for row in rows
        if row.strip() and not set(row.strip()) <= {"-", " "}
    }


def test_a_provider_without_a_key_requirement_says_not_needed(hermes: Hermes, home: Path) -> None:
    result = hermes("models")
    assert result.returncode == 0, result.stderr
    keys = key_column(result.stdout)
    assert keys[("mock", "echo")] == "not needed"
    assert keys[("openai", "gpt-4.1")] == "no"  # needs one and has none
    assert keys[("anthropic", next(m for p, m in keys if p == "anthropic"))] == "no"


def test_a_configured_key_says_yes(hermes: Hermes, home: Path) -> None:
    result = hermes("models", env={"OPENAI_API_KEY": "sk-test-123"})
    assert result.returncode == 0, result.stderr
    keys = key_column(result.stdout)
    assert keys[("openai", "gpt-4.1")] == "yes"
    assert keys[("mock", "echo")] == "not needed"
    assert "sk-test-123" not in result.stdout


def test_a_custom_endpoint_with_a_key_says_yes(hermes: Hermes, home: Path) -> None:
    # Custom endpoints need no key, but one that has a key configured says so (never showing it).
    (home / "config.toml").write_text(
        "[[providers.custom]]\n"
        'name = "keyed"\nbase_url = "http://127.0.0.1:9/v1"\napi_key_env = "KEYED_ENDPOINT_KEY"\n'
        "[[providers.custom]]\n"
        'name = "open"\nbase_url = "http://127.0.0.1:9/v1"\n'
        '[providers.keyed]\nmodels = ["box-1"]\n'
        '[providers.open]\nmodels = ["box-2"]\n'
    )
    result = hermes("models", env={"KEYED_ENDPOINT_KEY": "sk-custom-456"})
    assert result.returncode == 0, result.stderr
    keys = key_column(result.stdout)
    assert keys[("keyed", "box-1")] == "yes"
    assert keys[("open", "box-2")] == "not needed"
    assert "sk-custom-456" not in result.stdout + result.stderr
