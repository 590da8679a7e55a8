"""docs/embedding.md lists every core setting with its real default, and its example runs."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from hermes_core import ConfigError, Kernel
from hermes_core.settings import CoreSettings
from tests.docs import snippets

PAGE = "embedding.md"
ROW = re.compile(r"^\| `([\w.<>]+)` \| (`(.*?)`|—) \|", re.M)


def flat_defaults(model: type[BaseModel], prefix: str = "") -> dict[str, Any]:
    """Every leaf field of ``model`` as a dotted name, with its default."""
    out: dict[str, Any] = {}
    for name, field in model.model_fields.items():
        kind = field.annotation
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            out.update(flat_defaults(kind, f"{prefix}{name}."))
        else:
            out[f"{prefix}{name}"] = field.get_default(call_default_factory=True)
    return out


def test_the_table_has_every_setting_and_its_default() -> None:
    documented = {m.group(1): m.group(3) for m in ROW.finditer((snippets.DOCS / PAGE).read_text("utf-8"))}
    assert documented.pop("providers.<name>") is None  # free-form tables, one per provider
    real = flat_defaults(CoreSettings)
    assert sorted(documented) == sorted(real)
    for name, default in real.items():
        assert ast.literal_eval(documented[name]) == default, name


def test_the_persistence_example_prints_what_the_page_shows(tmp_path: Path) -> None:
    snippets.write(PAGE, tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
    result = subprocess.run(
        [sys.executable, "embed_persistent.py", "state/hermes"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == snippets.console_output(PAGE, "python embed_persistent.py state/hermes")
    assert (tmp_path / "state" / "hermes" / "hermes.sqlite3").is_file()


@pytest.mark.parametrize("storage", [{}, {"backend": "sqlite"}])
async def test_a_file_backend_without_a_place_is_refused(storage: dict[str, str]) -> None:
    kernel = Kernel.create(entry_points=["mock", "sqlite"], strict=True, settings={"storage": storage})
    with pytest.raises(ConfigError, match="storage backend 'sqlite' needs a place for its file"):
        async with kernel.running():
            pass


async def test_storage_path_alone_or_memory_by_name_are_fine(tmp_path: Path) -> None:
    db = tmp_path / "elsewhere" / "s.db"
    for storage in ({"backend": "sqlite", "path": str(db)}, {"backend": "memory"}):
        kernel = Kernel.create(
            entry_points=["mock", "sqlite"], strict=True, settings={"model": "mock:echo", "storage": storage}
        )
        async with kernel.running():
            session = await kernel.open_session(source="embed", owner="me", cwd=tmp_path)
            await (await session.submit("hi", owner="me")).outcome
    assert db.is_file()


def test_the_aiagent_example_prints_what_the_page_shows(tmp_path: Path) -> None:
    snippets.write(PAGE, tmp_path, only=("embed_aiagent.py",))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "OPENAI_", "ANTHROPIC_"))}
    env["HERMES_HOME"] = str(tmp_path / "home")
    result = subprocess.run(
        [sys.executable, "embed_aiagent.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == snippets.console_output(PAGE, "python embed_aiagent.py")
