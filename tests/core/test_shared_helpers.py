"""The shared helpers every transport uses: model references, import references, workspaces, MIME."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import hermes_core
from hermes_core import (
    IMAGE_MIME,
    InvalidValue,
    ModelRef,
    WorkspaceError,
    WorkspaceProblem,
    check_workspace,
    expand_home,
    image_mime,
    load_ref,
)
from hermes_core.testing import make_kernel


@pytest.mark.parametrize(
    ("text", "provider", "model"),
    [
        ("openai:gpt-4o", "openai", "gpt-4o"),
        ("ollama:qwen3:8b", "ollama", "qwen3:8b"),  # the model id keeps its own colon
        ("qwen3:8b", None, "qwen3:8b"),  # 'qwen3' names no provider
        ("gpt-4o", None, "gpt-4o"),
        ("openai:", "openai", ""),
        ("", None, ""),
    ],
)
def test_model_ref_prefix_is_a_provider_only_when_known(text: str, provider: str | None, model: str) -> None:
    known = {"openai", "ollama"}
    for directory in (known, known.__contains__):  # a container or a predicate such as hub.has
        parsed = ModelRef.parse(text, directory)
        assert (parsed.provider, parsed.model) == (provider, model)
        assert str(parsed) == (text if provider else model)


def test_model_ref_split_of_a_resolved_reference() -> None:
    assert ModelRef.split("ollama:qwen3:8b") == ModelRef("ollama", "qwen3:8b")
    assert ModelRef.split(None) == ModelRef(None, "")
    assert ModelRef.split("bare") == ModelRef(None, "bare")


def test_load_ref_resolves_dotted_attributes_and_names_bad_strings() -> None:
    assert load_ref("hermes_core.refs:ModelRef.parse") == ModelRef.parse
    assert load_ref(ModelRef) is ModelRef
    assert load_ref(None) is None
    with pytest.raises(ImportError, match="expected 'module:Class'"):
        load_ref("hermes_core.refs")
    with pytest.raises(ImportError, match="no attribute 'Nope'"):
        load_ref("hermes_core.refs:Nope")
    with pytest.raises(ModuleNotFoundError):
        load_ref("hermes_no_such_module:X")


def test_check_workspace_names_each_problem(tmp_path: Path) -> None:
    (tmp_path / "file.txt").write_text("x")
    (tmp_path / "root" / "inner").mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "root")
    cases = [
        ("", {}, WorkspaceProblem.EMPTY),
        ("relative/dir", {}, WorkspaceProblem.NOT_ABSOLUTE),
        (str(tmp_path / "missing"), {}, WorkspaceProblem.NOT_A_DIRECTORY),
        (str(tmp_path / "file.txt"), {}, WorkspaceProblem.NOT_A_DIRECTORY),
        ("x" * 5000, {"relative_to": tmp_path}, WorkspaceProblem.NOT_A_DIRECTORY),  # too long a name
        (str(tmp_path), {"roots": [str(tmp_path / "root")]}, WorkspaceProblem.OUTSIDE_ROOTS),
        (str(tmp_path / "root"), {"roots": []}, WorkspaceProblem.OUTSIDE_ROOTS),
    ]
    for path, options, problem in cases:
        with pytest.raises(WorkspaceError) as caught:
            check_workspace(path, field="where", **options)
        assert caught.value.problem is problem
        assert isinstance(caught.value, InvalidValue) and caught.value.field == "where"
        assert str(caught.value).startswith("where ")
    assert check_workspace(str(link)) == (tmp_path / "root").resolve()
    assert check_workspace(str(link / "inner"), roots=[link]) == (tmp_path / "root" / "inner").resolve()
    assert check_workspace(str(link), resolve=False) == link
    assert check_workspace("inner", relative_to=tmp_path / "root") == (tmp_path / "root" / "inner").resolve()
    home = Path(os.path.expanduser("~"))
    if home.is_dir():
        assert check_workspace("~", expand_user=True) == home.resolve()


def test_the_core_session_check_is_the_shared_validator() -> None:
    from hermes_core.session import open as session_open

    assert session_open.check_workspace is check_workspace


def test_image_mime_table() -> None:
    assert image_mime("a/B.JPEG") == "image/jpeg"
    assert image_mime(Path("x.webp")) == "image/webp"
    assert image_mime("notes.txt") is None
    assert set(IMAGE_MIME.values()) == {"image/png", "image/jpeg", "image/gif", "image/webp"}


def test_helpers_are_public_exports() -> None:
    for name in (
        "ModelRef",
        "load_ref",
        "check_workspace",
        "WorkspaceError",
        "WorkspaceProblem",
        "image_mime",
        "expand_home",
    ):
        assert name in hermes_core.__all__


def test_an_unknown_users_home_stays_as_written() -> None:
    """``Path.expanduser`` raises RuntimeError on ``~name`` of no such user; clients and models
    send such paths, and they must name a (missing) relative path instead of failing a request."""
    assert expand_home("~nosuchuser_hermes/x.png") == Path("~nosuchuser_hermes/x.png")
    assert expand_home("plain/x.png") == Path("plain/x.png")
    home = os.path.expanduser("~")
    if home != "~":
        assert expand_home("~/x") == Path(home) / "x"
    with pytest.raises(WorkspaceError) as caught:
        check_workspace("~nosuchuser_hermes", expand_user=True)
    assert caught.value.problem is WorkspaceProblem.NOT_ABSOLUTE


async def test_a_models_tool_path_under_an_unknown_home_is_a_missing_file(tmp_path: Path) -> None:
    """It used to end the whole turn as ``tool_crash`` (RuntimeError); the model now reads that
    the file is missing and goes on."""
    kernel = make_kernel(entry_points=["mock", "tools"])
    async with kernel.running():
        session = await kernel.open_session(source="embed", owner="t", cwd=tmp_path)
        turn = await session.submit('[[tool read_file {"path": "~nosuchuser_hermes/notes.txt"}]]', owner="t")
        outcome = await turn.outcome
        assert (outcome.status, outcome.reason) == ("complete", "stop")
        tool = next(r for r in session.rows if r.role == "tool")
        assert tool.content.startswith("no such file: ") and "~nosuchuser_hermes/notes.txt" in tool.content
