"""The embedding example in docs/ runs as documented."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_embed_example_runs(tmp_path: Path) -> None:
    (tmp_path / "hello.txt").write_text("hi\n")
    result = subprocess.run(
        [sys.executable, str(ROOT / "docs" / "examples" / "embed.py")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "[tool list_dir finished, error=False]" in result.stdout
    assert "Done: hello.txt" in result.stdout
    assert "outcome: complete (stop)" in result.stdout
