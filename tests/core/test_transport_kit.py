"""The transport toolkit: error table, internal errors, method binder, delta coalescer."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

import pytest

from hermes_core import (
    DeltaCoalescer,
    ErrorRule,
    ErrorTable,
    InvalidValue,
    MethodBinder,
    ReasoningDelta,
    SessionBusy,
    SessionNotFound,
    TextDelta,
    TitleChanged,
    internal_error,
    jsonrpc_adapters,
    rpc,
)


class Special(InvalidValue):
    pass


TABLE = ErrorTable(
    [
        ErrorRule(Special, 4100, "special"),
        ErrorRule(
            SessionNotFound,
            4001,
            "session not found",
            lambda exc, p: {"asked": p.get("id"), "sid": exc.session_id},
        ),
        ErrorRule(SessionBusy, lambda exc: 4009 if exc.reason == "busy" else 4010),
        ErrorRule(InvalidValue, 4002, data=lambda exc, _p: {"key": exc.field}),
    ]
)


def test_the_first_matching_row_wins_and_builds_code_message_data() -> None:
    err = TABLE.map(Special("x"))
    assert err is not None and (err.code, err.message, err.data) == (4100, "special", None)
    err = TABLE.map(InvalidValue("mode", ["a", "b"]))
    assert err is not None
    assert (err.code, err.message, err.data) == (
        4002,
        "invalid value for mode: expected one of a, b",
        {"key": "mode"},
    )
    err = TABLE.map(SessionNotFound("s1"), {"id": "asked"})
    assert err is not None and err.data == {"asked": "asked", "sid": "s1"}
    busy = TABLE.map(SessionBusy("compressing"))
    assert busy is not None and busy.code == 4010


def test_wire_errors_pass_through_and_unknown_ones_are_left_to_the_caller() -> None:
    own = rpc.RpcError(4242, "own")
    assert TABLE.map(own) is own
    assert TABLE.map(RuntimeError("boom")) is None


def test_a_table_builds_the_transports_error_type() -> None:
    class WireError(rpc.RpcError):
        pass

    table = ErrorTable([ErrorRule(InvalidValue, 4002)], make=WireError)
    assert isinstance(table.map(InvalidValue("x")), WireError)


def test_internal_error_logs_under_an_id_and_never_shows_the_text(caplog: pytest.LogCaptureFixture) -> None:
    log = logging.getLogger("test.kit")
    with caplog.at_level(logging.ERROR, logger="test.kit"):
        try:
            raise RuntimeError("secret detail")
        except RuntimeError as exc:
            tui = internal_error(rpc.TUI_OPTIONS, log, exc, "session.create")
    acp = internal_error(rpc.ACP_OPTIONS, log, None, "session/new")
    assert (tui.code, tui.message) == (rpc.INTERNAL_ERROR, "internal error")
    assert (acp.code, acp.message) == (rpc.INTERNAL_ERROR, "Internal error")
    error_id = tui.data["error_id"]
    assert len(error_id) == 32 and set(acp.data) == {"errorId"}
    assert "secret detail" not in repr(tui.data) + tui.message
    record = caplog.records[0]
    assert error_id in record.getMessage() and "session.create" in record.getMessage()
    assert record.exc_info is not None and "secret detail" in str(record.exc_info[1])


@dataclass
class Ok:
    result: Any


@dataclass
class Err:
    args: tuple[Any, ...]


def _binder(logged: list[str]) -> MethodBinder[dict[str, Any], Any]:
    def internal(exc: BaseException, name: str) -> rpc.RpcError:
        logged.append(name)
        return rpc.RpcError(rpc.INTERNAL_ERROR, "internal error", {"error_id": "x"})

    on_success, on_error = jsonrpc_adapters(Ok, lambda *args: Err(args))
    return MethodBinder(errors=TABLE, internal=internal, on_success=on_success, on_error=on_error)


def test_bound_methods_answer_results_mapped_errors_and_internal_errors() -> None:
    logged: list[str] = []
    binder = _binder(logged)

    async def impl(ctx: dict[str, Any], params: dict[str, Any]) -> Any:
        action = params["action"]
        if action == "ok":
            return {"ctx": ctx["name"], "extra": params.get("unknown")}
        if action == "core":
            raise SessionNotFound("s9")
        if action == "wire":
            raise rpc.RpcError(4003, "no data")
        raise KeyError("boom")

    method = binder.bind("session/open", impl)
    assert method.__name__ == "session_open"
    ctx = {"name": "c"}
    assert asyncio.run(method(ctx, action="ok", unknown=1)) == Ok({"ctx": "c", "extra": 1})
    assert asyncio.run(method(ctx, action="core", id="q")) == Err(
        (4001, "session not found", {"asked": "q", "sid": "s9"})
    )
    assert asyncio.run(method(ctx, action="wire")) == Err((4003, "no data"))  # no data member at all
    assert asyncio.run(method(ctx, action="crash")) == Err(
        (rpc.INTERNAL_ERROR, "internal error", {"error_id": "x"})
    )
    assert logged == ["session/open"]


def test_a_before_step_can_refuse_the_call() -> None:
    binder = _binder([])
    calls: list[str] = []

    async def impl(ctx: dict[str, Any], params: dict[str, Any]) -> str:
        calls.append("impl")
        return "done"

    async def not_ready(ctx: dict[str, Any]) -> rpc.RpcError | None:
        return rpc.RpcError(rpc.INTERNAL_ERROR, "not started", {"reason": "r"}) if ctx.get("down") else None

    method = binder.bind("x", impl, before=not_ready)
    assert asyncio.run(method({"down": True})) == Err((rpc.INTERNAL_ERROR, "not started", {"reason": "r"}))
    assert asyncio.run(method({})) == Ok("done")
    assert calls == ["impl"]


def _text(text: str) -> TextDelta:
    return TextDelta(session_id="s", turn_id="t", segment_id="g", text=text)


def _thought(text: str) -> ReasoningDelta:
    return ReasoningDelta(session_id="s", turn_id="t", segment_id="g", text=text)


def test_coalescer_merges_a_burst_and_leaves_other_events() -> None:
    coalescer = DeltaCoalescer()
    for event in (_text("a"), _thought("x"), _text("b"), _thought("y")):
        assert coalescer.add(event)
    assert not coalescer.add(TitleChanged(session_id="s", turn_id="t", title="T", origin="explicit"))
    assert coalescer.pending
    assert coalescer.take() == ("ab", "xy")
    assert not coalescer.pending and coalescer.take() == (None, None)
    coalescer.add(_text(""))  # an empty delta is still a delta
    assert coalescer.pending and coalescer.take() == ("", None)


def test_coalescer_drops_reasoning_only_when_asked() -> None:
    coalescer = DeltaCoalescer(keep_reasoning=False)
    assert coalescer.add(_thought("x")) and not coalescer.pending
    coalescer.add(_text("a"))
    assert coalescer.take() == ("a", None)


def test_coalescer_push_mode_splits_kinds_and_caps_size() -> None:
    flushed: list[tuple[str | None, str | None]] = []
    coalescer = DeltaCoalescer(
        lambda text, reasoning: flushed.append((text, reasoning)), split_kinds=True, max_chars=5
    )
    for event in (_thought("ab"), _thought("c"), _text("d"), _text("efgh"), _text("i")):
        coalescer.add(event)
    assert flushed == [(None, "abc"), ("defgh", None)]
    coalescer.flush()
    coalescer.flush()  # nothing pending: no call
    assert flushed[-1] == ("i", None) and len(flushed) == 3


def test_a_coalescer_that_flushes_by_itself_needs_somewhere_to_flush_to() -> None:
    with pytest.raises(ValueError, match="on_flush"):
        DeltaCoalescer(split_kinds=True)
    with pytest.raises(ValueError, match="on_flush"):
        DeltaCoalescer(max_chars=10)
    DeltaCoalescer()  # pull mode: take() returns what is pending
