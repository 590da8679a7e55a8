"""Fixtures of the provider tests: a fresh fake upstream per test."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.providers.upstream_fakes import FakeUpstream


@pytest.fixture
async def upstream() -> AsyncIterator[FakeUpstream]:
    async with FakeUpstream() as up:
        yield up
