"""Read and check a scenario file (docs/reference/scenarios.md).

Every problem is reported as one :class:`ScenarioError` whose text is ``FILE:LINE: problem``,
before anything runs.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path as FsPath
from typing import Any

from hermes_core.errors import ConfigError
from hermes_core.scenarios import model as m
from hermes_core.scenarios.lines import Path, key_lines, line_of

FORMAT = "hermes-scenario/1"
MAX_DELAY_MS = 60_000
MAX_FRAMES = 1_000_000
_TOML_AT = re.compile(r"\(at line (\d+), column \d+\)")
_WORD = re.compile(r"\s*\S+|\s+\Z")


class ScenarioError(ConfigError):
    """A scenario file that cannot be run; ``str()`` is ``FILE:LINE: problem``."""

    def __init__(self, file: str, line: int, problem: str) -> None:
        super().__init__(f"{file}:{line}: {problem}")
        self.file = file
        self.line = line
        self.problem = problem


class _Checker:
    """Walks the parsed document, raising :class:`ScenarioError` at the first problem."""

    def __init__(self, file: str, text: str) -> None:
        self.file = file
        self.lines = key_lines(text)

    def fail(self, path: Path, problem: str) -> ScenarioError:
        where = ".".join(str(p) if isinstance(p, str) else f"[{p}]" for p in path).replace(".[", "[")
        prefix = f"{where}: " if where else ""
        return ScenarioError(self.file, line_of(self.lines, path), prefix + problem)

    def table(self, value: Any, path: Path, allowed: set[str]) -> Mapping[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(path, "expected a table")
        for key in value:
            if key not in allowed:
                raise self.fail((*path, key), f"unknown key (allowed: {', '.join(sorted(allowed))})")
        return value

    def string(self, value: Any, path: Path, *, choices: tuple[str, ...] = (), empty: bool = True) -> str:
        if not isinstance(value, str):
            raise self.fail(path, "expected a string")
        if choices and value not in choices:
            raise self.fail(path, f"{value!r} is not one of {', '.join(choices)}")
        if not empty and not value:
            raise self.fail(path, "must not be empty")
        return value

    def integer(self, value: Any, path: Path, low: int, high: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(path, "expected an integer")
        if not low <= value <= high:
            raise self.fail(path, f"{value} is outside {low}..{high}")
        return value

    def array(self, value: Any, path: Path) -> list[Any]:
        if not isinstance(value, list):
            raise self.fail(path, "expected an array")
        return value

    def each(
        self, doc: Mapping[str, Any], key: str, path: Path, item: Callable[[Any, Path], Any]
    ) -> tuple[Any, ...]:
        if key not in doc:
            return ()
        return tuple(item(v, (*path, key, i)) for i, v in enumerate(self.array(doc[key], (*path, key))))

    # -- the parts -------------------------------------------------------------------------------
    def pieces(self, doc: Mapping[str, Any], key: str, path: Path, default_delay: int) -> tuple[m.Piece, ...]:
        if key not in doc:
            return ()
        value = doc[key]
        if isinstance(value, str):  # a plain string streams one delta per word
            return tuple(m.Piece(word, default_delay) for word in _WORD.findall(value))

        def piece(item: Any, at: Path) -> m.Piece:
            if isinstance(item, str):
                return m.Piece(item, default_delay)
            found = self.table(item, at, {"text", "delay_ms"})
            if "text" not in found:
                raise self.fail(at, "a chunk table needs text")
            delay = found.get("delay_ms", default_delay)
            return m.Piece(
                self.string(found["text"], (*at, "text")),
                self.integer(delay, (*at, "delay_ms"), 0, MAX_DELAY_MS),
            )

        return self.each(doc, key, path, piece)

    def tool_call(self, item: Any, path: Path) -> m.ToolCall:
        found = self.table(item, path, {"name", "arguments", "arguments_json"})
        if "name" not in found:
            raise self.fail(path, "a tool call needs a name")
        name = self.string(found["name"], (*path, "name"), empty=False)
        if "arguments_json" in found:
            text = self.string(found["arguments_json"], (*path, "arguments_json"))
            try:
                parsed = json.loads(text)
            except ValueError as exc:
                raise self.fail((*path, "arguments_json"), f"not JSON: {exc}") from None
            if not isinstance(parsed, dict):
                raise self.fail((*path, "arguments_json"), "must be a JSON object")
            return m.ToolCall(name, text)
        arguments = found.get("arguments", {})
        if not isinstance(arguments, dict):
            raise self.fail((*path, "arguments"), "expected a table")
        return m.ToolCall(name, json.dumps(arguments, ensure_ascii=False, default=str))

    def expect(self, item: Any, path: Path) -> m.Expect:
        found = self.table(item, path, {"kind", "answer", "steer"})
        for key in ("kind", "answer"):
            if key not in found:
                raise self.fail(path, f"an expected question needs {key}")
        kind = self.string(found["kind"], (*path, "kind"), choices=m.QUESTION_KINDS)
        steer = self.string(found["steer"], (*path, "steer"), empty=False) if "steer" in found else None
        return m.Expect(kind, self.string(found["answer"], (*path, "answer")), steer)

    def error(self, item: Any, path: Path) -> m.StepError:
        found = self.table(item, path, {"kind", "message", "retryable", "times", "retry_after_s"})
        kind = self.string(found.get("kind", "upstream"), (*path, "kind"), choices=m.ERROR_KINDS)
        message = self.string(found.get("message", "scripted failure"), (*path, "message"), empty=False)
        retryable = found.get("retryable", False)
        if not isinstance(retryable, bool):
            raise self.fail((*path, "retryable"), "expected true or false")
        times = self.integer(found.get("times", 1), (*path, "times"), 1, 100)
        after = found.get("retry_after_s", 0 if retryable else None)
        if after is not None and (isinstance(after, bool) or not isinstance(after, int | float) or after < 0):
            raise self.fail((*path, "retry_after_s"), "expected a number of seconds >= 0")
        return m.StepError(kind, message, retryable, times, None if after is None else float(after))

    def step(self, item: Any, path: Path) -> m.Step:
        keys = {"reasoning", "chunks", "text", "delay_ms", "tool_calls", "expect", "error", "finish", "usage"}
        found = self.table(item, path, keys)
        if "text" in found and "chunks" in found:
            raise self.fail((*path, "text"), "give text or chunks, not both")
        delay = self.integer(found.get("delay_ms", 0), (*path, "delay_ms"), 0, MAX_DELAY_MS)
        chunks = self.pieces(found, "text" if "text" in found else "chunks", path, delay)
        calls: tuple[m.ToolCall, ...] = self.each(found, "tool_calls", path, self.tool_call)
        finish = self.string(found.get("finish", "stop"), (*path, "finish"), choices=m.FINISH_REASONS)
        usage = None
        if "usage" in found:
            table = self.table(found["usage"], (*path, "usage"), {"input", "output"})
            usage = (
                self.integer(table.get("input", 0), (*path, "usage", "input"), 0, 10**9),
                self.integer(table.get("output", 0), (*path, "usage", "output"), 0, 10**9),
            )
        err = self.error(found["error"], (*path, "error")) if "error" in found else None
        return m.Step(
            reasoning=self.pieces(found, "reasoning", path, delay),
            chunks=chunks,
            tool_calls=calls,
            expect=self.each(found, "expect", path, self.expect),
            error=err,
            finish="tool_calls" if calls else finish,
            usage=usage,
            line=line_of(self.lines, path),
        )

    def steps(self, doc: Mapping[str, Any], path: Path) -> tuple[m.Step, ...]:
        if "steps" not in doc:
            raise self.fail(path, "needs at least one [[…steps]] table")
        steps: tuple[m.Step, ...] = self.each(doc, "steps", path, self.step)
        if not steps:
            raise self.fail((*path, "steps"), "needs at least one step")
        last = steps[-1]
        if last.tool_calls and not (last.error and not last.error.retryable):
            raise self.fail(
                (*path, "steps", len(steps) - 1),
                "the last step asks for tools; add a step that answers after them",
            )
        return steps

    def turn(self, item: Any, path: Path) -> m.ScenarioTurn:
        found = self.table(item, path, {"user", "steps", "background", "session_problem"})
        if "user" not in found:
            raise self.fail(path, "a turn needs user (the prompt the host sends)")
        user = self.string(found["user"], (*path, "user"), empty=False)
        extra = {
            key: self.string(found[key], (*path, key), empty=False)
            for key in ("background", "session_problem")
            if key in found
        }
        return m.ScenarioTurn(user, self.steps(found, path), line_of(self.lines, path), **extra)

    def subagent(self, item: Any, path: Path) -> m.Subagent:
        found = self.table(item, path, {"goal", "steps"})
        if "goal" not in found:
            raise self.fail(path, "a subagent needs goal (the delegate_task goal it answers)")
        return m.Subagent(self.string(found["goal"], (*path, "goal"), empty=False), self.steps(found, path))

    def fault(self, item: Any, path: Path) -> m.FaultRule:
        found = self.table(item, path, {"transport", "action", "after_frames", "delay_ms", "times"})
        for key in ("action", "after_frames"):
            if key not in found:
                raise self.fail(path, f"a fault needs {key}")
        action = self.string(found["action"], (*path, "action"), choices=m.FAULT_ACTIONS)
        delay = self.integer(found.get("delay_ms", 0), (*path, "delay_ms"), 0, MAX_DELAY_MS)
        if action == "delay" and "delay_ms" not in found:
            raise self.fail(path, "a delay fault needs delay_ms")
        return m.FaultRule(
            transport=self.string(
                found.get("transport", "any"), (*path, "transport"), choices=m.FAULT_TRANSPORTS
            ),
            action=action,
            after_frames=self.integer(found["after_frames"], (*path, "after_frames"), 0, MAX_FRAMES),
            delay_ms=delay,
            times=self.integer(found.get("times", 1), (*path, "times"), 1, 1000),
        )


def parse_scenario(text: str, file: str) -> m.Scenario:
    """Check and convert the text of a scenario file.

    :param text: the TOML text.
    :param file: the name shown in messages (and the base of a relative ``recording``).
    :raises ScenarioError: the first problem, as ``FILE:LINE: problem``.
    """
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        found = _TOML_AT.search(str(exc))
        problem = _TOML_AT.sub("", str(exc)).strip()
        raise ScenarioError(file, int(found.group(1)) if found else 1, f"not valid TOML: {problem}") from None
    check = _Checker(file, text)
    allowed = {
        "format",
        "name",
        "description",
        "turns",
        "subagents",
        "faults",
        "recording",
        "covers",
        "title",
    }
    check.table(doc, (), allowed)
    if "format" in doc and doc["format"] != FORMAT:
        raise check.fail(("format",), f"unknown format {doc['format']!r} (this Hermes reads {FORMAT!r})")
    recording = None
    if "recording" in doc:
        recording = str(FsPath(file).parent / check.string(doc["recording"], ("recording",), empty=False))
    turns: tuple[m.ScenarioTurn, ...] = check.each(doc, "turns", (), check.turn)
    if not turns and recording is None:
        raise check.fail((), "a scenario needs at least one [[turns]] table (or a recording)")
    covers = tuple(
        check.string(v, ("covers", i)) for i, v in enumerate(check.array(doc.get("covers", []), ("covers",)))
    )
    return m.Scenario(
        name=check.string(doc.get("name", FsPath(file).stem), ("name",), empty=False),
        path=file,
        description=check.string(doc.get("description", ""), ("description",)),
        turns=turns,
        subagents=check.each(doc, "subagents", (), check.subagent),
        faults=check.each(doc, "faults", (), check.fault),
        recording=recording,
        covers=covers,
        title=check.string(doc["title"], ("title",), empty=False) if "title" in doc else None,
    )


def load_scenario(path: str | FsPath) -> m.Scenario:
    """Read and check a scenario file.

    :raises ScenarioError: it cannot be read, is not TOML or does not describe a scenario.
    """
    name = str(path)
    try:
        text = FsPath(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ScenarioError(name, 1, f"cannot read the scenario file: {reason}") from None
    return parse_scenario(text, name)
