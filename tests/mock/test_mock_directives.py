"""Directive grammar: where directives may stand, how they are removed, and what stays as typed."""

from __future__ import annotations

import pytest
from mock_helpers import Collect, assistant, user

# [[reason r]] changes nothing in the echo, so the echo shows exactly how the text was cut.
REMOVAL_CASES = [
    ("[[reason r]] hello world", "hello world"),  # at the start: no space before, the one after goes
    ("hello [[reason r]] world", "hello world"),  # in the middle: the space before goes
    ("hello world [[reason r]]", "hello world"),  # at the end: the space before goes
    ("hello  [[reason r]]  world", "hello   world"),  # only one adjacent space is removed
    ("hello[[reason r]] world", "helloworld"),  # no space before: the one after goes
    ("hello[[reason r]]world", "helloworld"),  # no adjacent space at all
    ("a [[reason r]] [[finish length]] b", "a b"),  # each directive takes the space before it
    ("[[reason r]] [[finish length]] b", "b"),  # the first takes the space after, the second too
    ("a\n[[reason r]]\nb", "a\n\nb"),  # only a space counts, not other whitespace
    ("[[reason r]]", ""),
]


@pytest.mark.parametrize(("typed", "said"), REMOVAL_CASES)
async def test_directive_is_removed_with_one_adjacent_space(collect: Collect, typed: str, said: str) -> None:
    reply = await collect(typed)
    assert reply.text == "You said: " + said
    assert reply.reasoning == ["r"]


MALFORMED = [
    '[[tool read_file {"path": }]]',  # bad JSON
    "[[tool read_file [1, 2]]]",  # not an object
    "[[tool read_file]]",  # no JSON object
    '[[tool read_file {"path": "x"} trailing]]',  # junk after the object
    "[[tokens 100001]]",  # N out of range
    "[[tokens 0]]",
    "[[tokens five]]",  # not a number
    "[[tokens -3]]",
    "[[tokens 2.5]]",
    "[[rounds 100001]]",
    "[[rounds 0]]",
    "[[delay 60001]]",  # MS out of range
    "[[delay soon]]",
    "[[finish stop-now]]",  # not a finish reason
    "[[secret TWO WORDS]]",
    "[[error]]",  # no arguments
    "[[reason   ]]",
    "[[tokens 3",  # never closed
    "[[frobnicate 3]]",  # unknown name
    "[[TOKENS 3]]",  # names are lowercase
    "[tokens 3]",
]


@pytest.mark.parametrize("typed", MALFORMED)
async def test_malformed_or_unknown_directive_stays_as_typed(collect: Collect, typed: str) -> None:
    reply = await collect(f"before {typed} after")
    assert reply.text == f"You said: before {typed} after"
    assert reply.calls == []
    assert reply.reasoning == []
    assert reply.finish == "stop"


async def test_well_formed_directive_after_a_malformed_one_still_works(collect: Collect) -> None:
    reply = await collect("x [[tokens lots]] [[reason fine]] y")
    assert reply.text == "You said: x [[tokens lots]] y"
    assert reply.reasoning == ["fine"]


async def test_bounds_are_inclusive(collect: Collect) -> None:
    reply = await collect("[[delay 0]] [[tokens 100000]]")
    assert len(reply.deltas) == 100000
    assert reply.deltas[-1] == " t99999"


async def test_directives_in_earlier_user_messages_have_no_effect(collect: Collect) -> None:
    history = [
        user("old [[tokens 4]] [[finish length]] [[reason old]]"),
        assistant("t0 t1 t2 t3"),
        user("new message"),
    ]
    reply = await collect(history)
    assert reply.text == "You said: new message"
    assert reply.reasoning == []
    assert reply.finish == "stop"


async def test_whitespace_inside_the_brackets_is_tolerated(collect: Collect) -> None:
    reply = await collect("hi [[tokens\t 2 ]]")
    assert reply.text == "t0 t1"
    spaced = await collect('hi [[tool read_file   {"path": "a"}  ]]')
    assert [c.arguments for c in spaced.calls] == ['{"path": "a"}']
