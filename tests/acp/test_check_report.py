"""``hermes acp --check`` tells the truth: the config line, the model rule, counts and verdict."""

from __future__ import annotations

import subprocess

from tests.acp.conftest import HERMES, Home


def check(home: Home, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [HERMES, "acp", "--check"],
        env=home.env(**env),
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def test_a_config_that_cannot_start_fails_on_the_config_line(home: Home) -> None:
    home.write_config('model = "nope:x"\n')
    done = check(home)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert not any(line.startswith("ok   config") for line in lines)
    config = [line for line in lines if line.startswith("FAIL config: ")]
    assert len(config) == 1 and str(home.path / "config.toml") in config[0] and "nope:x" in config[0]
    assert lines[-1] == "Hermes ACP check: FAILED (1 problem)"
    assert lines[-2] == config[0]  # the verdict follows the failed line; nothing claims ok after it


def test_no_model_configured_is_a_warning_naming_the_setup(home: Home) -> None:
    (home.path / "config.toml").unlink()
    done = check(home)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert (
        "warn model: no model configured: the editor is asked to authenticate until one is; "
        "run `hermes acp --setup`"
    ) in lines
    assert lines[-1] == "Hermes ACP check: OK (1 warning)"


def test_a_configured_provider_without_its_key_fails(home: Home) -> None:
    home.write_config('model = "openai:gpt-4.1"\n')
    done = check(home)
    assert done.returncode == 1, done.stdout + done.stderr
    model = [line for line in done.stdout.splitlines() if line.startswith("FAIL model: ")]
    assert model == [
        "FAIL model: openai:gpt-4.1: provider 'openai' has no API key: set OPENAI_API_KEY "
        "(environment or .env), or providers.openai.api_key in config.toml; run `hermes acp --setup`"
    ]
    assert done.stdout.splitlines()[-1] == "Hermes ACP check: FAILED (1 problem)"
    keyed = check(home, OPENAI_API_KEY="sk-test-not-real")
    assert keyed.returncode == 0, keyed.stdout
    assert "ok   model: openai:gpt-4.1 (from config)" in keyed.stdout
    assert "sk-test-not-real" not in keyed.stdout + keyed.stderr


def test_every_stored_session_is_counted(home: Home) -> None:
    for n in range(3):
        subprocess.run(
            [HERMES, "run", "--session", f"s-{n}", "hello"],
            env=home.env(),
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
    done = check(home)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok   storage: opens read-only (3 stored sessions)" in done.stdout
