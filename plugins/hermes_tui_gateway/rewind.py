"""Validate the rewind fields of ``prompt.submit`` exactly in the order of
docs/reference/tui-gateway.md#rewind-edit-and-regenerate.

Steps 0-6 run here, synchronously and without any write; step 7 (the archive, fail-closed) is
the core's ``Session.rewind``. The result names the target row and the survivors' ids.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hermes_tui_gateway.encode import is_user_turn
from hermes_tui_gateway.params import GatewayError

if TYPE_CHECKING:
    from hermes_core import Session

TARGETS = ("truncate_before_row_id", "truncate_before_user_ordinal", "truncate_before_message_id")
_DIGITS = re.compile(r"[0-9]+")


@dataclass(frozen=True, slots=True)
class RewindPlan:
    """A validated rewind: the target row and its ordinal."""

    row_id: int
    ordinal: int


def requested(p: dict[str, Any]) -> bool:
    """Whether the submit carries any target or a truthy ``confirm_truncate``."""
    return any(p.get(k) is not None for k in TARGETS) or bool(p.get("confirm_truncate"))


def _as_int(value: Any, name: str) -> int | None:
    """Coerce step 3: a JSON integer or a decimal string; booleans and floats are refused."""
    if value is None:
        return None
    if type(value) is int:
        return value
    if isinstance(value, str) and _DIGITS.fullmatch(value.strip()):
        return int(value.strip())
    raise GatewayError(4004, f"{name} must be an integer")


def _users(session: Session) -> list[Any]:
    return [r for r in session.rows if is_user_turn(r)]


def _not_found(session: Session, ordinal: int | None, row_id: Any, message: str) -> GatewayError:
    data: dict[str, Any] = {
        "user_turn_count": len(_users(session)),
        "ordinal": ordinal,
        "segment_ordinal": ordinal,
        "prefix_user_count": 0,
    }
    if row_id is not None:
        data["row_id"] = row_id
    return GatewayError(4018, message, data)


def validate(session: Session, p: dict[str, Any], durable_storage: bool = True) -> RewindPlan:
    """Run steps 1-6 of docs/reference/tui-gateway.md#rewind-edit-and-regenerate; raise the first failure.

    :param session: the live session (step 0 already passed).
    :param p: the ``prompt.submit`` params.
    :param durable_storage: False for the in-memory backend, whose rows never outlive the process.
    :returns: the plan for step 7.
    """
    has_target = any(p.get(k) is not None for k in TARGETS)
    if session.busy:
        raise GatewayError(
            4009,
            "session busy — interrupt and wait for message.complete before rewinding",
            {"reason": "busy"},
        )
    if not has_target:
        raise GatewayError(4004, "confirm_truncate needs a target (truncate_before_row_id)")
    row_id = _as_int(p.get("truncate_before_row_id"), "truncate_before_row_id")
    ordinal = _as_int(p.get("truncate_before_user_ordinal"), "truncate_before_user_ordinal")
    if p.get("confirm_truncate") is not True:
        raise GatewayError(4029, "truncation needs confirm_truncate:true")
    users = _users(session)
    message_raw = p.get("truncate_before_message_id")
    message_row: int | None = None
    if message_raw is not None:
        if type(message_raw) is int:
            message_row = message_raw
        elif isinstance(message_raw, str) and _DIGITS.fullmatch(message_raw.strip()):
            message_row = int(message_raw.strip())
        else:
            raise _not_found(session, ordinal, None, f"message id not found: {message_raw}")
    if row_id is None and message_row is not None:
        row_id = message_row
    elif row_id is not None and message_row is not None and message_row != row_id:
        resolved = next((i for i, r in enumerate(users) if r.id == row_id), None)
        raise GatewayError(
            4030,
            "truncate_before_message_id names another row",
            {"ordinal": ordinal, "resolved_ordinal": resolved},
        )
    if row_id is not None:
        resolved = next((i for i, r in enumerate(users) if r.id == row_id), None)
        if resolved is None:
            raise _not_found(session, ordinal, row_id, f"rewind target not found: row {row_id}")
        if ordinal is not None and ordinal != resolved:
            raise GatewayError(
                4030,
                "truncate_before_user_ordinal disagrees with the row id",
                {"ordinal": ordinal, "resolved_ordinal": resolved},
            )
        target_ordinal = resolved
    else:
        assert ordinal is not None
        if not 0 <= ordinal < len(users):
            raise _not_found(session, ordinal, None, f"rewind target not found: ordinal {ordinal}")
        if durable_storage and session.info().persisted:
            raise GatewayError(
                4004,
                "ordinal-only truncation is unsafe for durable session history; "
                "include truncate_before_row_id",
            )
        row_id = users[ordinal].id
        target_ordinal = ordinal
    if target_ordinal == 0 and p.get("confirm_empty_truncate") is not True:
        raise GatewayError(4028, "this rewind would empty the transcript; send confirm_empty_truncate:true")
    assert row_id is not None
    return RewindPlan(row_id, target_ordinal)


def survivor_map(session: Session, cached: Any) -> dict[str, int | None]:
    """Return ``survivor_row_id_map``: each cached id to itself when still active, else null."""
    active = {r.id for r in session.rows}
    out: dict[str, int | None] = {}
    for item in cached if isinstance(cached, list) else []:
        try:
            rid = int(item)
        except (TypeError, ValueError):
            continue
        out[str(item)] = rid if rid in active else None
    return out
