"""The plugin contract is typed: mypy rejects a factory or a result used as the wrong type.

Runs mypy (the project's configuration) on a small plugin that gets the contract wrong and
checks every mistake is reported, and that the same plugin written correctly passes.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

HEADER = """
from __future__ import annotations
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from hermes_core import Provider, ProviderSpec, Session, Storage, StorageSpec, TransportContext

@dataclass
class MySettings:
    port: int

"""

WRONG = """
def make_provider(settings: Any, *, name: str, preset: Any = None) -> int:
    return 1

def make_storage(*, path: Path, read_only: bool = False) -> str:
    return "no"

PROVIDER = ProviderSpec(name="p", summary="s", factory=make_provider)  # line A
STORAGE = StorageSpec(name="s", factory=make_storage)  # line B

async def run(ctx: TransportContext[MySettings], session: Session) -> None:
    port: str = ctx.settings.port  # line C
    archived: str = (await session.rewind(before_row_id=1, allow_empty=True)).archived  # line D
    summary: bytes = await session.compress()  # line E
"""

RIGHT = """
def make_provider(settings: Any, *, name: str, preset: Any = None) -> Provider:
    raise NotImplementedError

def make_storage(*, path: Path, read_only: bool = False) -> Storage:
    raise NotImplementedError

PROVIDER = ProviderSpec(name="p", summary="s", factory=make_provider)
STORAGE = StorageSpec(name="s", factory=make_storage)

async def run(ctx: TransportContext[MySettings], session: Session) -> None:
    port: int = ctx.settings.port
    result = await session.rewind(before_row_id=1, allow_empty=True)
    compressed = await session.compress()
    print(port, result, compressed)
"""


def mypy(tmp_path: Path, body: str) -> str:
    source = tmp_path / "contract_plugin.py"
    source.write_text(HEADER + body, encoding="utf-8")
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--cache-dir",
            str(tmp_path / "cache"),
            str(source),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    return run.stdout + run.stderr


def test_mypy_rejects_each_broken_part_of_the_contract(tmp_path: Path) -> None:
    out = mypy(tmp_path, WRONG)
    lines = (HEADER + WRONG).splitlines()
    wrong_lines = {
        tag: next(i for i, text in enumerate(lines, 1) if f"# line {tag}" in text) for tag in "ABCDE"
    }
    for tag, line in wrong_lines.items():
        assert f"contract_plugin.py:{line}: error" in out, f"mypy missed mistake {tag}:\n{out}"


def test_mypy_accepts_the_contract_used_right(tmp_path: Path) -> None:
    out = mypy(tmp_path, RIGHT)
    assert "Success" in out, out
