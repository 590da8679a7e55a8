"""The output cap, the bounded collector, sensitive-path rules and LocalFileAccess."""

from __future__ import annotations

from pathlib import Path, PurePath

import pytest

from hermes_core import ToolError
from hermes_tools.common import BoundedOutput, cap_text, is_sensitive
from hermes_tools.fileaccess import LocalFileAccess


def test_cap_text_keeps_head_and_tail_and_counts_the_cut() -> None:
    text = "".join(chr(ord("a") + n % 26) for n in range(10_000))
    capped = cap_text(text, 1000)
    assert len(capped) <= 1000
    head, rest = capped.split("\n…[", 1)
    count, tail = rest.split(" characters cut]…\n")
    assert text.startswith(head) and text.endswith(tail)
    assert len(head) + int(count.replace(",", "")) + len(tail) == len(text)
    assert abs(len(head) - len(tail)) <= 1
    assert cap_text("short", 1000) == "short"


@pytest.mark.parametrize("chunk_size", [1, 7, 333, 5000])
def test_bounded_output_matches_cap_text(chunk_size: int) -> None:
    text = "".join(f"line {n}\n" for n in range(5000))
    collector = BoundedOutput(700)
    for start in range(0, len(text), chunk_size):
        collector.add(text[start : start + chunk_size])
    assert collector.total == len(text)
    assert collector.text() == cap_text(text, 700)


@pytest.mark.parametrize(
    ("path", "sensitive"),
    [
        ("/repo/.git/config", True),
        ("/home/u/.ssh/config", True),
        ("/repo/.env", True),
        ("/repo/.env.production", True),
        ("/home/u/id_rsa", True),
        ("/home/u/id_ed25519", True),
        ("/certs/site.pem", True),
        ("/certs/site.key", True),
        ("/home/u/id_rsa.pub", False),
        ("/repo/.envrc", False),
        ("/repo/src/keys.py", False),
        ("/repo/.github/workflows/ci.yml", False),
    ],
)
def test_sensitive_paths(path: str, sensitive: bool) -> None:
    assert is_sensitive(PurePath(path)) is sensitive


def test_local_file_access_round_trip_and_errors(tmp_path: Path) -> None:
    access = LocalFileAccess(max_bytes=100)
    target = tmp_path / "deep" / "dir" / "f.txt"
    access.write_text(target, "héllo\r\nworld\n")
    assert target.read_bytes() == "héllo\r\nworld\n".encode()
    assert access.read_text(target) == "héllo\r\nworld\n"
    with pytest.raises(ToolError, match="file not found"):
        access.read_text(tmp_path / "none")
    with pytest.raises(ToolError, match="directory"):
        access.read_text(tmp_path / "deep")
    (tmp_path / "big.txt").write_text("x" * 101)
    with pytest.raises(ToolError, match="too large"):
        access.read_text(tmp_path / "big.txt")
