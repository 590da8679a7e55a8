"""``config.toml`` and ``.env`` reading and writing (in-process, no subprocess)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from hermes_cli.config_file import ConfigFileError, read_config, write_config
from hermes_cli.dotenv import read_dotenv, write_dotenv_entry
from hermes_cli.paths import resolve_paths
from hermes_core.errors import InvalidValue


def test_hermes_home_holds_config_env_and_data(tmp_path: Path) -> None:
    paths = resolve_paths({"HERMES_HOME": str(tmp_path)})
    assert paths.config_path == tmp_path / "config.toml"
    assert paths.env_path == tmp_path / ".env"
    assert paths.data_dir == tmp_path


def test_without_hermes_home_platform_dirs_are_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    paths = resolve_paths({})
    assert paths.config_path == tmp_path / "cfg" / "hermes" / "config.toml"
    assert paths.env_path == tmp_path / "cfg" / "hermes" / ".env"
    assert paths.data_dir == tmp_path / "data" / "hermes"


def test_dotenv_accepts_the_usual_forms(tmp_path: Path) -> None:
    env = tmp_path / ".env"
    env.write_text(
        "# a comment\n"
        "\n"
        'A="double # not a comment"\n'
        "B='single \\n literal'\n"
        "C=plain value # trailing comment\n"
        "export D=exported\n"
        'E="esc \\"quoted\\" back\\\\slash"\n'
        "F=\n"
        "not a line\n"
        'G="unterminated\n'
    )
    result = read_dotenv(env)
    assert result.values == {
        "A": "double # not a comment",
        "B": "single \\n literal",
        "C": "plain value",
        "D": "exported",
        "E": 'esc "quoted" back\\slash',
        "F": "",
    }
    assert len(result.warnings) == 2
    assert "line 9" in result.warnings[0] and "line 10" in result.warnings[1]


def test_dotenv_write_quotes_replaces_and_keeps_other_lines(tmp_path: Path) -> None:
    env = tmp_path / ".env"
    env.write_text("# keep me\nKEY=old\nOTHER=1\nKEY=dupe\n")
    write_dotenv_entry(env, "KEY", 'new "value" \\ here')
    write_dotenv_entry(env, "ADDED", "x")
    text = env.read_text()
    assert text == '# keep me\nKEY="new \\"value\\" \\\\ here"\nOTHER=1\nADDED="x"\n'
    assert read_dotenv(env).values == {"KEY": 'new "value" \\ here', "OTHER": "1", "ADDED": "x"}
    assert stat.S_IMODE(env.stat().st_mode) == 0o600


@pytest.mark.parametrize("value", ["two\nlines", "carriage\rreturn"])
def test_dotenv_rejects_a_line_break_before_writing(tmp_path: Path, value: str) -> None:
    env = tmp_path / ".env"
    env.write_text('KEY="before"\n')
    with pytest.raises(InvalidValue):
        write_dotenv_entry(env, "KEY", value)
    assert env.read_text() == 'KEY="before"\n'


def test_config_roundtrip_is_private(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "config.toml"
    assert read_config(path) == {}
    write_config(path, {"model": "mock:echo", "agent": {"max_tool_rounds": 3}})
    assert read_config(path) == {"model": "mock:echo", "agent": {"max_tool_rounds": 3}}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in path.parent.iterdir()] == ["config.toml"]  # no temp file left behind


@pytest.mark.parametrize(
    ("text", "line"),
    [('model = "ok"\n\nagent = [1,,2]\n', 3), ('model = "ok"\nbroken line here\n', 2), ("a = 1\na = 2\n", 2)],
)
def test_malformed_config_names_file_and_line(tmp_path: Path, text: str, line: int) -> None:
    path = tmp_path / "config.toml"
    path.write_text(text)
    with pytest.raises(ConfigFileError) as info:
        read_config(path)
    assert info.value.line == line
    assert str(path) in str(info.value) and f"line {line}" in str(info.value)
