"""docs/writing-providers.md runs as printed: its files, written out, make the output it shows."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.docs import snippets

PAGE = "writing-providers.md"


def test_the_try_script_prints_what_the_page_shows(tmp_path: Path) -> None:
    snippets.write(PAGE, tmp_path, only=("hermes_parrot/", "try_parrot.py"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
    env["PYTHONPATH"] = str(tmp_path)
    result = subprocess.run(
        [sys.executable, "try_parrot.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == snippets.console_output(PAGE, "python try_parrot.py")


def test_the_page_shows_every_chunk_type_and_finish_reason() -> None:
    from typing import get_args

    from hermes_core import FinishReason
    from hermes_core.providers import CHUNK_TYPES, Purpose

    text = (snippets.DOCS / PAGE).read_text("utf-8")
    for chunk in CHUNK_TYPES:
        assert f"`{chunk.__name__}(" in text, chunk
    for reason in get_args(FinishReason):
        assert f"`{reason}`" in text, reason
    for purpose in get_args(Purpose):
        assert f"**`{purpose}`**" in text, purpose
    from hermes_core import ChatRequest

    for field in ChatRequest.__dataclass_fields__:
        assert f"| `{field}" in text, field
