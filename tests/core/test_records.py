"""``kernel.records`` (docs/reference/core.md#records): what a plugin sees, and every bad argument
refused by the owner with a clear ``InvalidValue`` before it reaches the backend."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hermes_core import KEEP, Expect, InvalidValue, StorageError
from hermes_core.testing import make_kernel


async def test_a_plugin_keeps_fenced_records_through_the_owner() -> None:
    kernel = make_kernel(entry_points=["mock"], settings={"model": "mock:echo"})
    async with kernel.running():
        runs = kernel.records.space("api.runs")
        claim = await runs.claim("run_1", {"status": "queued"}, owner="instance-a", scope="alice")
        assert claim.won and claim.record.value == {"status": "queued"} and claim.record.epoch == 1
        fence = Expect(owner="instance-a", epoch=claim.record.epoch)
        moved = await runs.put("run_1", {"status": "running"}, scope="alice", expect=fence)
        assert moved is not None and moved.version == 2
        done = await runs.release("run_1", expect=fence, value={"status": "completed"}, ttl_s=3600)
        assert done is not None and done.owner is None and done.expires_at is not None
        assert await runs.put("run_1", {"status": "running"}, scope="alice", expect=fence) is None
        kept = await runs.release("run_1", expect=Expect(held=False), value=KEEP)
        assert kept is not None and kept.value == {"status": "completed"}
        page = await runs.list(scope="alice")
        assert [r.key for r in page.records] == ["run_1"] and page.next_cursor is None
        assert await runs.count(scope="alice") == 1 and await runs.count(scope="bob") == 0
        assert await kernel.records.space("api.other").get("run_1") is None
        assert await kernel.records.sweep() == 0


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda r: r.space("Bad Namespace"), "namespace"),
        (lambda r: r.space(""), "namespace"),
        (lambda r: r.space("x" * 65), "namespace"),
    ],
)
async def test_bad_namespaces_are_refused(call: object, field: str) -> None:
    kernel = make_kernel(entry_points=["mock"], settings={"model": "mock:echo"})
    async with kernel.running():
        with pytest.raises(InvalidValue) as caught:
            call(kernel.records)  # type: ignore[operator]
    assert caught.value.field == field and "namespace" in str(caught.value)


async def test_bad_arguments_are_refused_with_their_name() -> None:
    kernel = make_kernel(entry_points=["mock"], settings={"model": "mock:echo"})
    async with kernel.running():
        space = kernel.records.space("plugin.things")
        cases = [
            (space.get(""), "key"),
            (space.get("k" * 513), "key"),
            (space.get("nul\0"), "key"),
            (space.put("k", {1, 2}), "value"),
            (space.put("k", float("nan")), "value"),
            (space.put("k", "x" * (1024 * 1024 + 1)), "value"),
            (space.put("k", 1, ttl_s=-1), "ttl_s"),
            (space.put("k", 1, ttl_s=True), "ttl_s"),
            (space.put("k", 1, scope=3), "scope"),  # type: ignore[arg-type]
            (space.put("k", 1, expect={"owner": "a"}), "expect"),  # type: ignore[arg-type]
            (space.claim("k", 1, owner=""), "owner"),
            (space.claim("k", 1, owner="a", stale_after_s=0), "stale_after_s"),
            (space.list(limit=0), "limit"),
            (space.list(limit=1001), "limit"),
            (space.list(cursor="garbage"), "cursor"),
            (space.evict(keep=-1), "keep"),
            (space.release("k", expect=None), "expect"),  # type: ignore[arg-type]
        ]
        for call, field in cases:
            with pytest.raises(InvalidValue) as caught:
                await call
            assert caught.value.field == field, (field, caught.value)
        assert await space.count() == 0  # nothing bad was written


async def test_records_need_a_running_kernel() -> None:
    kernel = make_kernel(entry_points=["mock"], settings={"model": "mock:echo"})
    with pytest.raises(StorageError, match="not running"):
        await kernel.records.space("plugin.things").get("k")


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
async def test_a_claim_held_by_a_dead_process_is_taken_at_once_with_take_gone(
    backend: str, tmp_path: Path
) -> None:
    """An owner string from ``new_owner()`` names its process: once that process is gone,
    ``claim(take_gone=True)`` takes the record without waiting for ``stale_after_s``; a live
    holder (this process) keeps it."""
    script = "from hermes_core.testing import make_kernel; print(make_kernel().records.new_owner())"
    dead = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    dead_owner = dead.stdout.strip()
    kernel = make_kernel(
        entry_points=["mock", "sqlite"],
        settings={"model": "mock:echo", "data_dir": str(tmp_path), "storage": {"backend": backend}},
    )
    async with kernel.running():
        records = kernel.records
        assert records.holder_gone(dead_owner)
        live = records.new_owner()
        assert live != records.new_owner() and not records.holder_gone(live)
        space = records.space("plugin.leases")
        assert (await space.claim("r1", {"n": 1}, owner=dead_owner, scope="s")).won
        assert (await space.claim("r2", {"n": 2}, owner=live, scope="s")).won
        waiting = await space.claim("r1", {}, owner=live, stale_after_s=3600)
        assert not waiting.won and waiting.record.owner == dead_owner
        taken = await space.claim("r1", {"n": 3}, owner=live, scope="s", stale_after_s=3600, take_gone=True)
        assert taken.won and taken.record.owner == live and taken.record.value == {"n": 3}
        other = records.new_owner()
        kept = await space.claim("r2", {}, owner=other, stale_after_s=3600, take_gone=True)
        assert not kept.won and kept.record.owner == live
        again = await space.claim("r1", {}, owner=other, stale_after_s=3600, take_gone=True)
        assert not again.won and again.record.owner == live
