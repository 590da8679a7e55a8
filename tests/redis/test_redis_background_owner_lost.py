"""A background response whose instance was killed (``kill -9``) is settled by another instance
when the instances also share the Redis run bus: the same scenario as without the bus
(``tests/postgres/test_pg_background_owner_lost.py``), since a background response's liveness
lease is in the shared records (docs/reference/api-server.md#background-responses)."""

from __future__ import annotations

from pathlib import Path

from tests.api.api_helpers import start_server
from tests.postgres.test_pg_background_owner_lost import KEY, owner_killed_mid_turn
from tests.redis.conftest import Shared
from tests.services import postgres_dsn

BUS = """
[agent]
provider_retries = 0
[titles]
refine = false
[bus]
backend = "redis"
heartbeat_s = 0.5
owner_grace_s = 3
"""


async def test_a_killed_owners_background_response_is_settled_with_the_redis_bus(
    tmp_path: Path, shared: Shared
) -> None:
    postgres_dsn()  # the records are shared when storage is PostgreSQL
    env = {**shared.env, "API_SERVER_KEY": KEY}
    await owner_killed_mid_turn(
        lambda name: start_server(tmp_path / name, config=shared.config + BUS, env=env)
    )
