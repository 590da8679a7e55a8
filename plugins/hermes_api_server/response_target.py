"""Where a Responses or run turn runs: a fresh session, a named or chained one (a fork when the
chained turn is not its session's newest) (docs/reference/api-server.md#responses)."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as _dt
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from hermes_api_server.errors import ApiError
from hermes_api_server.pool import in_use_error
from hermes_core import SeedMessage, SessionInUse

if TYPE_CHECKING:
    from hermes_api_server.state import ServerState
    from hermes_core import Session


def mint_session_id() -> str:
    """Return a fresh session id in the core's ``YYYYMMDD_HHMMSS_xxxxxx`` shape."""
    now = _dt.datetime.now(_dt.UTC)
    return f"{now:%Y%m%d_%H%M%S}_{secrets.token_hex(3)}"


def not_found(response_id: str) -> ApiError:
    """Return the 404 of an unknown, foreign or gone response."""
    return ApiError(
        404, "response_not_found", f"Response not found: {response_id}", param="previous_response_id"
    )


@dataclass(slots=True)
class Target:
    """Where a Responses or run turn runs."""

    session_id: str
    fork_from: int | None = None  # chain from an older turn: fork up to this row
    instructions: str | None = None
    seed: list[SeedMessage] = field(default_factory=list)


async def chained_target(state: ServerState, who: str, response_id: str) -> Target:
    """Resolve ``previous_response_id`` into its session (404 when unknown or gone)."""
    record = await state.store.get_response(who, response_id)
    if record is None or not await state.pool.exists(record["session_id"]):
        raise not_found(response_id)
    return Target(record["session_id"], record["through_row_id"], record["instructions"])


@contextlib.asynccontextmanager
async def open_target(
    state: ServerState, who: str, target: Target, channel: str | None, workspace: Path | None
) -> AsyncIterator[Session]:
    """Open the target session; fork it when the chained turn is not its newest."""
    async with state.pool.use(
        target.session_id, owner=who, channel_key=channel, workspace=workspace, seed=target.seed
    ) as session:
        through = target.fork_from
        newest = session.rows[-1].id if session.rows else None
        if through is None or newest is None or through >= newest or session.busy:
            yield session
            return
        try:
            fork = await session.branch(owner=who, up_to_row_id=through)
        except SessionInUse:
            raise in_use_error() from None
    state.pool.adopt(fork)
    try:
        yield fork
    finally:
        await asyncio.shield(state.pool.release(fork))
