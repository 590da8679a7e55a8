"""``evolve``: the cheaper ``dataclasses.replace`` of the turn path gives what replace gives."""

from __future__ import annotations

import dataclasses

import pytest

from hermes_core.events import Usage
from hermes_core.evolve import evolve
from hermes_core.storage import NewRow, SessionRecord


def test_evolve_equals_replace_for_the_turn_records() -> None:
    record = SessionRecord(id="s", source="api", cwd="/w", profile="default", created_at=1.0)
    row = NewRow(role="user", content="hi")
    usage = Usage(input=3, output=4)
    for obj, changes in (
        (record, {"title": "t", "updated_at": 2.0}),
        (row, {"created_at": 5.0}),
        (usage, {"context_used": 7, "context_max": None}),
    ):
        made = evolve(obj, **changes)
        assert made == dataclasses.replace(obj, **changes)  # type: ignore[type-var]
        assert type(made) is type(obj) and made is not obj
    assert record.title is None and row.created_at is None  # the original is untouched


def test_evolve_refuses_an_unknown_field() -> None:
    with pytest.raises(TypeError, match="nope"):
        evolve(NewRow(role="user", content="hi"), nope=1)


@dataclasses.dataclass(frozen=True)
class _Checked:
    value: int
    twice: int = dataclasses.field(init=False, default=0)

    def __post_init__(self) -> None:
        object.__setattr__(self, "twice", self.value * 2)


def test_evolve_runs_post_init_of_a_class_that_has_one() -> None:
    assert evolve(_Checked(1), value=4).twice == 8
