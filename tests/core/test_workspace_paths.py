"""``resolve_in_workspace``: the one resolver tools and commands use to stay in the workspace."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from hermes_core import (
    ToolCompleted,
    ToolContext,
    ToolSpec,
    WorkspaceError,
    WorkspaceProblem,
    hookimpl,
    resolve_in_workspace,
)
from hermes_core.testing import ScriptedAnswerer, make_kernel


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "sub" / "a.txt").write_text("a", encoding="utf-8")
    (tmp_path / "secret.txt").write_text("s", encoding="utf-8")
    os.symlink(tmp_path / "secret.txt", ws / "escape.txt")
    os.symlink(ws / "sub", ws / "inner")
    return ws.resolve()


def test_paths_inside_resolve(workspace: Path) -> None:
    assert resolve_in_workspace("sub/a.txt", workspace) == workspace / "sub" / "a.txt"
    assert resolve_in_workspace(".", workspace) == workspace
    assert resolve_in_workspace("sub/../sub/new.txt", workspace) == workspace / "sub" / "new.txt"
    assert resolve_in_workspace(str(workspace / "sub"), workspace) == workspace / "sub"
    assert resolve_in_workspace("inner/a.txt", workspace) == workspace / "sub" / "a.txt"


@pytest.mark.parametrize("path", ["/etc/passwd", "../secret.txt", "sub/../../secret.txt", "escape.txt", "~"])
def test_paths_outside_are_refused(workspace: Path, path: str) -> None:
    with pytest.raises(WorkspaceError) as caught:
        resolve_in_workspace(path, workspace, field="PATH")
    assert caught.value.problem is WorkspaceProblem.OUTSIDE_WORKSPACE
    assert str(caught.value) == f"PATH is outside the workspace: {path}"


def test_an_empty_path_and_a_symlink_loop_are_refused(workspace: Path) -> None:
    with pytest.raises(WorkspaceError) as empty:
        resolve_in_workspace("", workspace)
    assert empty.value.problem is WorkspaceProblem.EMPTY
    os.symlink(workspace / "loop", workspace / "loop")
    with pytest.raises(WorkspaceError):
        resolve_in_workspace("loop", workspace)


def test_also_admits_cleared_paths(workspace: Path) -> None:
    outside = workspace.parent / "secret.txt"
    assert resolve_in_workspace(str(outside), workspace, also=[outside]) == outside
    with pytest.raises(WorkspaceError):
        resolve_in_workspace(str(outside), workspace, also=[workspace.parent / "other"])


class PeekPlugin:
    """Two tools reading a file: one declares its path argument, the other hides it."""

    hermes_plugin_name = "peek"

    @staticmethod
    def _read(args: dict[str, Any], ctx: ToolContext) -> str:
        return ctx.resolve(args["target"]).read_text(encoding="utf-8")

    @hookimpl
    def hermes_tools(self) -> list[ToolSpec]:
        schema = {"type": "object", "properties": {"target": {"type": "string"}}}
        return [
            ToolSpec(name="peek", description="read", schema=schema, handler=self._read, kind="read"),
            ToolSpec(
                name="peek_declared",
                description="read",
                schema=schema,
                handler=self._read,
                kind="read",
                path_args=("target",),
            ),
        ]


async def _call(workspace: Path, tool: str, target: str, answers: dict[str, str]) -> tuple[str, list[str]]:
    kernel = make_kernel(PeekPlugin(), entry_points=["mock"], settings={"model": "mock:echo"})
    async with kernel.running():
        session = await kernel.open_session(source="embed", owner="test", cwd=workspace)
        answerer = ScriptedAnswerer(kernel, answers)
        turn = await session.submit(
            f'[[tool {tool} {{"target": "{target}"}}]]', owner="test", answerable=answerer.kinds
        )
        events = await answerer.run(turn)
    done = [e for e in events if isinstance(e, ToolCompleted)]
    return done[0].result_text, [q.kind for q in answerer.asked]


async def test_a_tool_cannot_resolve_an_undeclared_path_outside(workspace: Path) -> None:
    inside, asked = await _call(workspace, "peek", "sub/a.txt", {})
    assert (inside, asked) == ("a", [])
    outside, asked = await _call(workspace, "peek", "../secret.txt", {})
    assert outside == "path is outside the workspace: ../secret.txt" and asked == []


async def test_a_declared_path_outside_is_asked_about_then_allowed(workspace: Path) -> None:
    allowed, asked = await _call(workspace, "peek_declared", "../secret.txt", {"approval": "once"})
    assert (allowed, asked) == ("s", ["approval"])
    denied, asked = await _call(workspace, "peek_declared", "../secret.txt", {"approval": "deny"})
    assert asked == ["approval"] and denied != "s"


async def test_an_unscripted_question_fails_the_test_instead_of_hanging(workspace: Path) -> None:
    with pytest.raises(AssertionError, match="unscripted question"):
        await _call(workspace, "peek_declared", "../secret.txt", {})
