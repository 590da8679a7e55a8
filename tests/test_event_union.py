"""Events are a closed union, and every encoder handles or explicitly ignores each member.

``hermes_core.events.AnyEvent`` lists every event class. Each encoder matches on it and ends
with ``case _: assert_never(event)``, so mypy names an encoder that misses a newly added type.
These tests check the three parts of that promise: the union is every event class; each
encoder's ``match`` names every member and ends in ``assert_never``; and mypy really rejects a
``match`` on ``AnyEvent`` that leaves one member out.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from hermes_core import events as ev
from hermes_core.event_log.fields import event_types

ROOT = Path(__file__).resolve().parents[1]

#: Every place that turns core events into something a client sees: file, class, method.
ENCODERS = [
    ("plugins/hermes_api_server/chat_stream.py", "ChatChunks", "pump"),
    ("plugins/hermes_api_server/run_log.py", "RunProjection", "feed"),
    ("plugins/hermes_api_server/response_builder.py", "ResponseBuilder", "feed"),
    ("plugins/hermes_tui_gateway/projection.py", "EventProjector", "_on_event"),
    ("plugins/hermes_acp/turnstream.py", "TurnStream", "handle"),
    ("plugins/hermes_delegation/child.py", "Relay", "feed"),
    ("plugins/hermes_pi/runstream.py", "RunStream", "_on_event"),
]

NAMES = {cls.__name__ for cls in ev.EVENT_TYPES}


def _subclasses(cls: type) -> set[type]:
    found: set[type] = set()
    for sub in cls.__subclasses__():
        found |= {sub} | _subclasses(sub)
    return found


def test_the_union_is_every_event_class() -> None:
    # By name: a slotted dataclass leaves its first, unslotted class behind among the subclasses;
    # the event log's private decoding twins (given the real class once built) are not events.
    public = {cls.__name__ for cls in _subclasses(ev.Event) if not cls.__name__.startswith("_")}
    assert public == NAMES
    assert all(getattr(ev, cls.__name__) is cls for cls in ev.EVENT_TYPES)
    assert len(ev.EVENT_TYPES) == len(NAMES) == 20
    # The event log decodes exactly these.
    assert set(event_types()) == NAMES


def _method(path: str, cls: str, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef:
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and item.name == name:
                    return item
    raise AssertionError(f"{path}: no {cls}.{name}")


def _pattern_classes(pattern: ast.pattern) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(pattern):
        if isinstance(node, ast.MatchClass) and isinstance(node.cls, ast.Name):
            names.add(node.cls.id)
    return names


def _isinstance_classes(fn: ast.AST) -> set[str]:
    """Class names an ``isinstance(x, A | B)`` before the match already took care of."""
    names: set[str] = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance":
            names |= {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
    return names


@pytest.mark.parametrize(("path", "cls", "name"), ENCODERS, ids=[f"{c}.{n}" for _, c, n in ENCODERS])
def test_every_encoder_handles_or_ignores_each_event_type(path: str, cls: str, name: str) -> None:
    fn = _method(path, cls, name)
    matches = [node for node in ast.walk(fn) if isinstance(node, ast.Match)]
    assert matches, f"{path}: {cls}.{name} has no match on the event"
    guarded = [
        m
        for m in matches
        if isinstance(m.subject, ast.Name)
        and isinstance(m.cases[-1].pattern, ast.MatchAs)
        and m.cases[-1].pattern.pattern is None
        and ast.unparse(m.cases[-1].body[0]) == f"assert_never({m.subject.id})"
    ]
    assert guarded, f"{path}: {cls}.{name}: no match ends with `case _: assert_never(...)`"
    named = set().union(*(_pattern_classes(c.pattern) for m in matches for c in m.cases))
    named |= _isinstance_classes(fn) & NAMES
    assert NAMES - named == set(), f"{path}: {cls}.{name} says nothing of {sorted(NAMES - named)}"


def _mypy(tmp_path: Path, handled: list[str]) -> subprocess.CompletedProcess[str]:
    cases = "\n".join(f"        case {n}():\n            pass" for n in handled)
    source = tmp_path / "encoder_snippet.py"
    source.write_text(
        "from typing import assert_never\n"
        f"from hermes_core.events import AnyEvent, {', '.join(sorted(NAMES))}\n\n\n"
        "def encode(event: AnyEvent) -> None:\n"
        "    match event:\n"
        f"{cases}\n"
        "        case _:\n"
        "            assert_never(event)\n",
        encoding="utf-8",
    )
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--cache-dir",
            str(tmp_path / "cache"),
            "--follow-imports=silent",
            str(source),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )


def test_mypy_rejects_an_encoder_that_misses_an_event_type(tmp_path: Path) -> None:
    every = [cls.__name__ for cls in ev.EVENT_TYPES]
    missing = [n for n in every if n != "BackgroundCompleted"]
    run = _mypy(tmp_path, missing)
    assert run.returncode == 1, run.stdout + run.stderr
    assert 'Argument 1 to "assert_never" has incompatible type "BackgroundCompleted"' in run.stdout, (
        run.stdout
    )
    run = _mypy(tmp_path, every)
    assert run.returncode == 0, run.stdout + run.stderr
