"""A ``HERMES_HOME`` that is a file, and unknown keys in ``config.toml``, over the real CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli import cli_helpers as h


@pytest.mark.parametrize("args", [["run", "hi"], ["--help"], ["config", "path"], ["acp"]])
def test_hermes_home_that_is_a_file_is_one_clear_line(tmp_path: Path, args: list[str]) -> None:
    home = tmp_path / "not-a-dir"
    home.write_text("oops")
    result = h.run_hermes(home, *args, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr == f"Error: HERMES_HOME must be a directory, but {home} is a file\n"
    assert result.stdout == ""


def test_hermes_home_under_a_file_names_the_file(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = h.run_hermes(blocker / "home", "run", "hi", cwd=tmp_path)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr and "NotADirectoryError" not in result.stderr
    assert f"but {blocker} (on the way to {blocker / 'home'}) is a file" in result.stderr


def test_unknown_config_keys_warn_with_a_suggestion(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    config = home / "config.toml"
    config.write_text(
        'modle = "mock:alt"\n'
        "[api_servr]\nport = 1\n"
        '[providers.openai]\nbase_ulr = "http://127.0.0.1:9/v1"\n'
        '[model_aliases]\nquick = "mock:alt"\n'
    )
    result = h.run_hermes(home, "run", "hi")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "You said: hi\n"  # the misspelt `model` is not used: the warning says why
    lines = result.stderr.splitlines()
    assert f"Warning: {config}: unknown key: modle (did you mean model?)" in lines
    assert f"Warning: {config}: unknown key: api_servr (did you mean api_server?)" in lines
    assert any(
        line.startswith(f"Warning: {config}: unknown key: providers.openai.base_ulr")
        and "did you mean providers.openai.base_url?" in line
        for line in lines
    )
    assert not any("model_aliases" in line for line in lines)
    nested = home / "config.toml"
    nested.write_text('model = "mock:alt"\n[agent]\nmax_tool_roundz = 3\n')
    failed = h.run_hermes(home, "run", "hi")
    assert "did you mean agent.max_tool_rounds?" in failed.stderr
    refused = h.run_hermes(home, "config", "set", "titles.refin", "false")
    assert refused.returncode == 2
    assert "unknown key: titles.refin (did you mean titles.refine?" in refused.stderr


def test_a_section_of_a_plugin_that_is_not_loaded_is_not_called_unknown(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text('modle = "x"\n[throwaway]\ngreeting = "hi"\n')
    deselected = h.run_hermes(home, "--no-plugin", "api", "run", "hi")
    assert deselected.returncode == 0, deselected.stderr
    assert "unknown key: throwaway" not in deselected.stderr
    assert "unknown key: modle" in deselected.stderr  # a top-level value is still checked
    everything = h.run_hermes(home, "run", "hi")
    assert "unknown key: throwaway" in everything.stderr
