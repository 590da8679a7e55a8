"""An upstream that streams a lone surrogate escape (``"\\ud800"``) cannot break a turn.

Such a string is no text: before, the reply could not be stored (SQLite refuses it), the turn
crashed with a traceback and its answer was lost. Each lone surrogate now reads as U+FFFD, the
replacement character, through the ``openai`` and ``anthropic`` providers alike.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.core.vendor_kernels import vendor_kernel
from tests.providers.upstream_fakes import FakeUpstream
from tests.providers.vendors import VENDORS, Vendor


@pytest.fixture
async def upstream() -> AsyncIterator[FakeUpstream]:
    async with FakeUpstream() as up:
        yield up


@pytest.mark.parametrize("vendor", VENDORS, ids=[v.name for v in VENDORS])
async def test_a_lone_surrogate_from_the_model_is_replaced_and_stored(
    upstream: FakeUpstream, vendor: Vendor, tmp_path: Path
) -> None:
    frames = vendor.reply("bad \ud800 and \udfff, a pair \U0001f600")
    assert b"\\ud800" in b"".join(frames)  # the escape really is on the wire
    upstream.replies(vendor.chat_path, [frames, vendor.reply("fine")])
    settings = {"storage": {"backend": "sqlite", "path": str(tmp_path / "h.sqlite3")}}
    kernel = vendor_kernel(vendor, upstream, plugins=("tools", "sqlite"), **settings)
    async with kernel.running():
        session = await kernel.open_session(source="embed", owner="me", cwd=tmp_path)
        first = await (await session.submit("hello", owner="me")).outcome
        assert (first.status, first.reason) == ("complete", "stop"), first
        second = await (await session.submit("again", owner="me")).outcome
        assert second.reason == "stop"
        replies = [r.content for r in await session.history() if r.role == "assistant"]
        assert replies == ["bad \ufffd and \ufffd, a pair \U0001f600", "fine"]
