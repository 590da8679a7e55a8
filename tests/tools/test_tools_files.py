"""read_file, write_file and edit_file through the plugin's specs, on real files."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from tools_testkit import FakeToolContext, call

from hermes_core import FileChange, ToolError, ToolSpec


def test_read_file_numbers_lines(specs: dict[str, ToolSpec], ctx: FakeToolContext, workspace: Path) -> None:
    (workspace / "src").mkdir()
    (workspace / "src" / "app.py").write_text("import os\n\nprint(os.sep)\n")
    result = call(specs["read_file"], {"path": "src/app.py"}, ctx)
    assert not result.is_error
    assert result.text == "     1\timport os\n     2\t\n     3\tprint(os.sep)"


def test_read_file_pages_with_offset_and_limit(
    specs: dict[str, ToolSpec], ctx: FakeToolContext, workspace: Path
) -> None:
    (workspace / "big.txt").write_text("".join(f"line {n}\n" for n in range(1, 11)))
    result = call(specs["read_file"], {"path": "big.txt", "offset": 4, "limit": 3}, ctx)
    lines = result.text.splitlines()
    assert lines[:3] == ["     4\tline 4", "     5\tline 5", "     6\tline 6"]
    assert "pass offset=7" in lines[3]
    with pytest.raises(ToolError, match="past the end"):
        call(specs["read_file"], {"path": "big.txt", "offset": 11}, ctx)


def test_read_file_missing_names_the_path(
    specs: dict[str, ToolSpec], ctx: FakeToolContext, workspace: Path
) -> None:
    with pytest.raises(ToolError) as info:
        call(specs["read_file"], {"path": "nope.txt"}, ctx)
    assert str(workspace / "nope.txt") in str(info.value)


@pytest.mark.parametrize("data", [b"abc\x00def", b"\xff\xfe\xfa not utf-8"])
def test_read_file_refuses_binary(
    specs: dict[str, ToolSpec], ctx: FakeToolContext, workspace: Path, data: bytes
) -> None:
    (workspace / "blob.bin").write_bytes(data)
    with pytest.raises(ToolError, match="binary file"):
        call(specs["read_file"], {"path": "blob.bin"}, ctx)


def test_read_file_output_is_capped_head_and_tail(
    specs: dict[str, ToolSpec], make_ctx: Callable[..., FakeToolContext], workspace: Path
) -> None:
    ctx = make_ctx(settings={"output_cap_chars": 1000})
    (workspace / "long.txt").write_text("".join(f"row {n:05d}\n" for n in range(1, 2001)))
    result = call(specs["read_file"], {"path": "long.txt"}, ctx)
    assert len(result.text) <= 1000
    assert result.text.startswith("     1\trow 00001")
    assert "characters cut]" in result.text
    assert result.text.endswith("  2000\trow 02000")
    assert "row 01000" not in result.text
    cut = int(result.text.split("…[", 1)[1].split(" characters cut", 1)[0].replace(",", ""))
    head, tail = result.text.split(f"\n…[{cut:,} characters cut]…\n")
    assert len(head) + cut + len(tail) == 2000 * len("     1\trow 00001\n") - 1


def test_write_file_creates_with_parents_and_reports_new_file(
    specs: dict[str, ToolSpec], ctx: FakeToolContext, workspace: Path
) -> None:
    spec = specs["write_file"]
    args = {"path": "pkg/new.py", "content": "x = 1\n"}
    assert spec.preview is not None
    proposed = spec.preview(args, ctx)
    assert proposed == FileChange(path=str(workspace / "pkg" / "new.py"), old_text=None, new_text="x = 1\n")
    assert not (workspace / "pkg").exists()  # the preview touched nothing
    result = call(spec, args, ctx)
    assert (workspace / "pkg" / "new.py").read_text() == "x = 1\n"
    assert result.file_change == proposed
    assert "Created" in result.text


def test_write_file_overwrite_carries_old_text(
    specs: dict[str, ToolSpec], ctx: FakeToolContext, workspace: Path
) -> None:
    target = workspace / "a.txt"
    target.write_bytes(b"old\r\nlines\r\n")
    result = call(specs["write_file"], {"path": str(target), "content": "new\n"}, ctx)
    assert result.file_change == FileChange(path=str(target), old_text="old\r\nlines\r\n", new_text="new\n")
    assert target.read_bytes() == b"new\n"


def test_write_file_refuses_to_replace_a_binary_file(
    specs: dict[str, ToolSpec], ctx: FakeToolContext, workspace: Path
) -> None:
    (workspace / "img.bin").write_bytes(b"\x89PNG\x00\x00")
    with pytest.raises(ToolError, match="binary file"):
        call(specs["write_file"], {"path": "img.bin", "content": "text"}, ctx)
    assert (workspace / "img.bin").read_bytes() == b"\x89PNG\x00\x00"


def test_edit_file_replaces_once_and_preview_is_side_effect_free(
    specs: dict[str, ToolSpec], ctx: FakeToolContext, workspace: Path
) -> None:
    target = workspace / "m.py"
    target.write_text("def f():\n    return 1\n")
    spec = specs["edit_file"]
    args = {"path": "m.py", "old_string": "return 1", "new_string": "return 2"}
    assert spec.preview is not None
    proposed = spec.preview(args, ctx)
    assert proposed == FileChange(
        path=str(target), old_text="def f():\n    return 1\n", new_text="def f():\n    return 2\n"
    )
    assert target.read_text() == "def f():\n    return 1\n"
    result = call(spec, args, ctx)
    assert target.read_text() == "def f():\n    return 2\n"
    assert result.file_change == proposed
    assert "1 occurrence" in result.text


def test_edit_file_old_string_missing(
    specs: dict[str, ToolSpec], ctx: FakeToolContext, workspace: Path
) -> None:
    (workspace / "m.py").write_text("a = 1\n")
    with pytest.raises(ToolError) as info:
        call(specs["edit_file"], {"path": "m.py", "old_string": "b = 2", "new_string": "c"}, ctx)
    assert str(info.value) == f"old_string not found in {workspace / 'm.py'}"


def test_edit_file_ambiguous_names_the_count_and_replace_all_fixes_it(
    specs: dict[str, ToolSpec], ctx: FakeToolContext, workspace: Path
) -> None:
    target = workspace / "m.py"
    target.write_text("x\nx\nx\n")
    args: dict[str, object] = {"path": "m.py", "old_string": "x", "new_string": "y"}
    spec = specs["edit_file"]
    assert spec.preview is not None
    with pytest.raises(ToolError, match="found 3 times; pass replace_all or add context"):
        spec.preview(args, ctx)
    with pytest.raises(ToolError, match="found 3 times; pass replace_all or add context"):
        call(spec, dict(args), ctx)
    assert target.read_text() == "x\nx\nx\n"
    result = call(spec, {**args, "replace_all": True}, ctx)
    assert target.read_text() == "y\ny\ny\n"
    assert "3 occurrences" in result.text


def test_edit_file_matches_crlf_files_and_keeps_their_endings(
    specs: dict[str, ToolSpec], ctx: FakeToolContext, workspace: Path
) -> None:
    target = workspace / "win.txt"
    target.write_bytes(b"one\r\ntwo\r\nthree\r\n")
    call(specs["edit_file"], {"path": "win.txt", "old_string": "one\ntwo", "new_string": "1\n2"}, ctx)
    assert target.read_bytes() == b"1\r\n2\r\nthree\r\n"


def test_edit_file_missing_file_and_empty_old_string(
    specs: dict[str, ToolSpec], ctx: FakeToolContext, workspace: Path
) -> None:
    with pytest.raises(ToolError, match="file not found"):
        call(specs["edit_file"], {"path": "ghost.py", "old_string": "a", "new_string": "b"}, ctx)
    (workspace / "m.py").write_text("a")
    with pytest.raises(ToolError, match="must not be empty"):
        call(specs["edit_file"], {"path": "m.py", "old_string": "", "new_string": "b"}, ctx)
