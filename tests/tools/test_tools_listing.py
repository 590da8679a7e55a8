"""list_dir and search on real directory trees, including sensitive entries."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from tools_testkit import FakeToolContext, call

from hermes_core import ToolError, ToolSpec


@pytest.fixture
def tree(workspace: Path) -> Path:
    """Populate the workspace with code, a nested dir and every kind of sensitive entry."""
    (workspace / "src").mkdir()
    (workspace / "src" / "app.py").write_text("TOKEN = 'app'\nprint(TOKEN)\n")
    (workspace / "src" / "util.txt").write_text("TOKEN in text\n")
    (workspace / "README.md").write_text("hello TOKEN\n")
    (workspace / "logo.bin").write_bytes(b"TOKEN\x00\x01")
    (workspace / ".git").mkdir()
    (workspace / ".git" / "config").write_text("TOKEN git\n")
    (workspace / ".ssh").mkdir()
    (workspace / ".ssh" / "known").write_text("TOKEN ssh\n")
    for name in (".env", ".env.local", "id_rsa", "id_ed25519", "server.pem", "tls.key"):
        (workspace / name).write_text(f"TOKEN {name}\n")
    (workspace / "id_rsa.pub").write_text("TOKEN public\n")
    return workspace


def test_list_dir_marks_dirs_and_hides_sensitive_entries(
    specs: dict[str, ToolSpec], ctx: FakeToolContext, tree: Path
) -> None:
    result = call(specs["list_dir"], {}, ctx)
    lines = result.text.splitlines()
    assert lines[:4] == ["id_rsa.pub", "logo.bin", "README.md", "src/"]
    assert lines[4] == "[8 sensitive entries not shown; list it by name to see it]"
    for hidden in (".git", ".ssh", ".env", ".env.local", "id_rsa", "id_ed25519", "server.pem", "tls.key"):
        assert hidden not in lines and f"{hidden}/" not in lines


def test_list_dir_shows_a_sensitive_target(
    specs: dict[str, ToolSpec], ctx: FakeToolContext, tree: Path
) -> None:
    (tree / ".git" / "hooks").mkdir()
    (tree / ".git" / ".env").write_text("x")
    result = call(specs["list_dir"], {"path": ".git"}, ctx)
    assert result.text.splitlines() == [".env", "config", "hooks/"]


def test_list_dir_errors(specs: dict[str, ToolSpec], ctx: FakeToolContext, tree: Path) -> None:
    with pytest.raises(ToolError, match="not a directory"):
        call(specs["list_dir"], {"path": "README.md"}, ctx)
    with pytest.raises(ToolError, match="not found"):
        call(specs["list_dir"], {"path": "missing"}, ctx)


def test_search_finds_text_and_skips_binary_and_sensitive(
    specs: dict[str, ToolSpec], ctx: FakeToolContext, tree: Path
) -> None:
    result = call(specs["search"], {"pattern": r"TOKEN"}, ctx)
    lines = result.text.splitlines()
    assert lines == [
        "id_rsa.pub:1: TOKEN public",
        "README.md:1: hello TOKEN",
        "src/app.py:1: TOKEN = 'app'",
        "src/app.py:2: print(TOKEN)",
        "src/util.txt:1: TOKEN in text",
        "5 matching lines in 4 files",
    ]


def test_search_in_a_sensitive_target_searches_it(
    specs: dict[str, ToolSpec], ctx: FakeToolContext, tree: Path
) -> None:
    result = call(specs["search"], {"pattern": "TOKEN", "path": ".ssh"}, ctx)
    assert result.text.splitlines()[0] == ".ssh/known:1: TOKEN ssh"
    result = call(specs["search"], {"pattern": "TOKEN", "path": ".env"}, ctx)
    assert result.text.splitlines()[0] == ".env:1: TOKEN .env"


def test_search_glob_and_no_match(specs: dict[str, ToolSpec], ctx: FakeToolContext, tree: Path) -> None:
    result = call(specs["search"], {"pattern": "TOKEN", "glob": "*.py"}, ctx)
    assert [line.split(":")[0] for line in result.text.splitlines()[:-1]] == ["src/app.py", "src/app.py"]
    result = call(specs["search"], {"pattern": "TOKEN", "glob": "src/**/*.txt"}, ctx)
    assert result.text.splitlines()[0] == "src/util.txt:1: TOKEN in text"
    result = call(specs["search"], {"pattern": "nothing-like-this", "path": "src"}, ctx)
    assert not result.is_error
    assert result.text == "No matches for /nothing-like-this/ in src"


def test_search_invalid_regex_reports_the_re_error(specs: dict[str, ToolSpec], ctx: FakeToolContext) -> None:
    with pytest.raises(ToolError) as info:
        call(specs["search"], {"pattern": "(unclosed"}, ctx)
    assert "missing ), unterminated subpattern" in str(info.value)


def test_search_is_bounded(
    specs: dict[str, ToolSpec], make_ctx: Callable[..., FakeToolContext], workspace: Path
) -> None:
    (workspace / "many.txt").write_text("hit\n" * 1000)
    result = call(specs["search"], {"pattern": "hit"}, make_ctx())
    lines = result.text.splitlines()
    assert len(lines) == 202
    assert lines[-1].startswith("[stopped at 200 matches")


def test_search_does_not_follow_symlinks_out_of_the_target(
    specs: dict[str, ToolSpec], ctx: FakeToolContext, workspace: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("TOKEN outside\n")
    (workspace / "link").symlink_to(outside)
    (workspace / "file-link.txt").symlink_to(outside / "secret.txt")
    result = call(specs["search"], {"pattern": "TOKEN"}, ctx)
    assert result.text == "No matches for /TOKEN/ in ."
