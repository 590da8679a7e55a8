"""``HERMES_TRACE_PLUGINS=1``: the CLI asks the kernel to log every hook call, on stderr only."""

from __future__ import annotations

from tests.cli.cli_helpers import Hermes


def test_trace_plugins_logs_hook_calls_on_stderr(hermes: Hermes) -> None:
    traced = hermes("run", "hello", env={"HERMES_TRACE_PLUGINS": "1"})
    assert traced.returncode == 0, traced.stderr
    assert traced.stdout == "You said: hello\n"  # stdout carries the reply only
    lines = [line for line in traced.stderr.splitlines() if "hermes.plugins.trace" in line]
    for hook in ("hermes_transports", "hermes_model_providers", "hermes_tools", "hermes_slash_commands"):
        assert any(f"call {hook}() -> " in line for line in lines), (hook, traced.stderr)
    assert any(" mock" in line for line in lines if "call hermes_model_providers()" in line)
    done = [line for line in lines if ": done " in line]
    assert len(done) == len([line for line in lines if ": call " in line])


def test_without_the_variable_nothing_is_traced(hermes: Hermes) -> None:
    plain = hermes("run", "hello")
    assert plain.returncode == 0, plain.stderr
    assert "hermes.plugins.trace" not in plain.stderr
    odd = hermes("run", "hello", env={"HERMES_TRACE_PLUGINS": "loud"})
    assert "HERMES_TRACE_PLUGINS" in odd.stderr and "hermes.plugins.trace" not in odd.stderr
