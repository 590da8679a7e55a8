"""Scenario files: what they mean, and how a broken one is refused before anything starts."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest

from hermes_core.scenarios import ScenarioError, load_scenario, parse_scenario, shipped
from tests.cli.cli_helpers import HERMES, clean_env

GOOD = """\
format = "hermes-scenario/1"
name = "demo"

[[turns]]
user = "hi"

  [[turns.steps]]
  reasoning = "think first"
  chunks = ["Hel", { text = "lo", delay_ms = 5 }]
  delay_ms = 2

[[turns]]
user = "run it"

  [[turns.steps]]
  tool_calls = [{ name = "terminal", arguments = { command = "rm -rf x" } }]
  expect = [{ kind = "approval", answer = "once" }]

  [[turns.steps]]
  text = "done now"
  error = { kind = "rate_limit", message = "slow", retryable = true, times = 2 }

[[faults]]
transport = "tui"
action = "drop"
after_frames = 3
"""


def test_a_scenario_reads_into_turns_steps_and_faults() -> None:
    scenario = parse_scenario(GOOD, "demo.toml")
    first, second = scenario.turns
    assert first.user == "hi"
    step = first.steps[0]
    assert [(p.text, p.delay_ms) for p in step.reasoning] == [("think", 2), (" first", 2)]
    assert [(p.text, p.delay_ms) for p in step.chunks] == [("Hel", 2), ("lo", 5)]
    call = second.steps[0].tool_calls[0]
    assert (call.name, call.arguments) == ("terminal", '{"command": "rm -rf x"}')
    assert second.steps[0].finish == "tool_calls"
    assert [(e.kind, e.answer) for e in second.steps[0].expect] == [("approval", "once")]
    error = second.steps[1].error
    assert error is not None and (error.kind, error.retryable, error.times) == ("rate_limit", True, 2)
    (fault,) = scenario.faults
    assert (fault.transport, fault.action, fault.after_frames, fault.times) == ("tui", "drop", 3, 1)


@pytest.mark.parametrize(
    ("patch", "line", "problem"),
    [
        (("after_frames = 3", "after_frames = -1"), 26, "faults[0].after_frames: -1 is outside 0..1000000"),
        (('action = "drop"', 'action = "explode"'), 25, "faults[0].action: 'explode' is not one of"),
        (
            ('answer = "once" }', 'answer = "once", who = 1 }'),
            17,
            "turns[1].steps[0].expect[0].who: unknown key",
        ),
        (
            ('  [[turns.steps]]\n  text = "done now"', '  text = "done now"'),
            15,
            "turns[1].steps[0]: the last",
        ),
        (
            ('kind = "rate_limit"', 'kind = "teapot"'),
            21,
            "turns[1].steps[1].error.kind: 'teapot' is not one of",
        ),
        (('user = "run it"', 'prompt = "run it"'), 13, "turns[1].prompt: unknown key"),
        (
            ("delay_ms = 5", 'delay_ms = "soon"'),
            9,
            "turns[0].steps[0].chunks[1].delay_ms: expected an integer",
        ),
        (('[[turns]]\nuser = "hi"', '[[turns]]\nuser = "hi'), 5, "not valid TOML"),
        (('format = "hermes-scenario/1"', 'format = "hermes-scenario/9"'), 1, "format: unknown format"),
        (
            ('answer = "once" }', 'answer = "once", steer = "" }'),
            17,
            "turns[1].steps[0].expect[0].steer: ",
        ),
        (('user = "run it"', 'user = "run it"\nbackground = 3'), 14, "turns[1].background: "),
        (('user = "run it"', 'user = "run it"\nsession_problem = ""'), 14, "turns[1].session_problem: "),
        (('name = "demo"', 'name = "demo"\ntitle = ["x"]'), 3, "title: "),
    ],
)
def test_a_broken_scenario_names_its_line_and_problem(
    patch: tuple[str, str], line: int, problem: str
) -> None:
    old, new = patch
    assert old in GOOD
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(GOOD.replace(old, new, 1), "demo.toml")
    assert caught.value.line == line, str(caught.value)
    assert str(caught.value).startswith(f"demo.toml:{line}: ")
    assert problem in caught.value.problem


def test_an_unreadable_scenario_is_a_scenario_error(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match=r"missing\.toml:1: cannot read the scenario file"):
        load_scenario(tmp_path / "missing.toml")


def test_every_shipped_scenario_parses() -> None:
    names = [path.stem for path in shipped()]
    assert {"text", "tools", "approval", "clarify", "errors", "subagent"} <= set(names)
    for path in shipped():
        assert load_scenario(path).turns


BROKEN = textwrap.dedent(
    """\
    [[turns]]
    user = "x"

      [[turns.steps]]
      chunks = ["a"]
      finish = "sideways"
    """
)


@pytest.mark.parametrize(
    "command",
    [["tui"], ["tui", "--ws", "127.0.0.1:0"], ["acp"], ["api", "--port", "0"], ["run", "hello"]],
    ids=["tui", "tui-ws", "acp", "api", "run"],
)
def test_every_surface_refuses_a_broken_scenario_before_it_starts(
    tmp_path: Path, home: Path, command: list[str]
) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(BROKEN, encoding="utf-8")
    env = clean_env(home, {"HERMES_MODEL": f"mock:scenario:{bad}"})
    done = subprocess.run(
        [HERMES, *command], env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert lines == [
        f"Error: {bad}:6: turns[0].steps[0].finish: 'sideways' is not one of stop, length, refusal"
    ]


def test_the_root_model_flag_names_a_scenario_too(tmp_path: Path, home: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(BROKEN, encoding="utf-8")
    done = subprocess.run(
        [HERMES, "--model", f"mock:scenario:{bad}", "tui"],
        env=clean_env(home),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert (
        done.stderr.strip()
        == f"Error: {bad}:6: turns[0].steps[0].finish: 'sideways' is not one of stop, length, refusal"
    )


def test_hermes_run_plays_a_scenario(home: Path) -> None:
    text = next(p for p in shipped() if p.stem == "text")
    done = subprocess.run(
        [HERMES, "run", "--model", f"mock:scenario:{text}", "Say hello"],
        env=clean_env(home),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Hello, host!\n"


def test_the_scenario_command_lists_checks_and_shows(tmp_path: Path, home: Path) -> None:
    env = clean_env(home)

    def hermes(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [HERMES, "scenario", *args], env=env, capture_output=True, text=True, timeout=60
        )

    listed = hermes("list")
    assert listed.returncode == 0 and listed.stdout.split() == [str(p) for p in shipped()]
    text = next(p for p in shipped() if p.stem == "text")
    assert hermes("check", str(text)).stdout == f"ok: {text}\n"
    shown = json.loads(hermes("show", str(text)).stdout)
    assert shown["name"] == "text" and shown["turns"][0]["user"] == "Say hello"
    assert [c["text"] for c in shown["turns"][0]["steps"][0]["chunks"]] == ["Hello", ", ", "host", "!"]
    bad = tmp_path / "bad.toml"
    bad.write_text(BROKEN, encoding="utf-8")
    for command in ("check", "show"):
        refused = hermes(command, str(bad))
        assert refused.returncode == 2 and refused.stdout == ""
        assert (
            refused.stderr.strip()
            == f"Error: {bad}:6: turns[0].steps[0].finish: 'sideways' is not one of stop, length, refusal"
        )


def test_the_keys_a_host_acts_on_read_into_the_scenario() -> None:
    text = GOOD.replace('name = "demo"', 'name = "demo"\ntitle = "Demo title"')
    text = text.replace('user = "run it"', 'user = "run it"\nbackground = "Count"\nsession_problem = "boom"')
    text = text.replace('answer = "once" }', 'answer = "once", steer = "Be brief" }')
    scenario = parse_scenario(text, "demo.toml")
    turn = scenario.turns[1]
    assert (scenario.title, turn.background, turn.session_problem) == ("Demo title", "Count", "boom")
    assert turn.steps[0].expect[0].steer == "Be brief"
