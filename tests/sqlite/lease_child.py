"""A second Hermes-like process for the lease tests: drives the SQLite storage from stdin.

Usage: ``python lease_child.py DB_PATH SESSION_ID OWNER TTL_S``. It takes the lease, prints
``acquired <holder or None>``, then obeys one command per stdin line: ``release``, ``create``
(store the session with two rows), ``crash`` (exit at once, closing nothing) or ``exit``.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from hermes_core import NewRow, SessionRecord
from hermes_sqlite.plugin import make_storage


async def main(path: Path, session_id: str, owner: str, ttl_s: float) -> None:
    storage = make_storage(path=path)
    await storage.open()
    holder = await storage.acquire_lease(session_id, owner, ttl_s)
    print(f"acquired {holder}", flush=True)
    loop = asyncio.get_running_loop()
    while True:
        line = (await loop.run_in_executor(None, sys.stdin.readline)).strip()
        if line == "release":
            await storage.release_lease(session_id, owner)
            print("released", flush=True)
        elif line == "create":
            record = SessionRecord(id=session_id, source="cli", cwd="/", profile="default")
            ids = await storage.create_session(record, [NewRow("user", "hi"), NewRow("assistant", "hello")])
            print("created " + " ".join(map(str, ids)), flush=True)
        elif line == "crash":
            os._exit(0)
        else:
            await storage.close()
            return


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), sys.argv[2], sys.argv[3], float(sys.argv[4])))
