"""Kernels whose model is a real HTTP provider (``openai`` or ``anthropic``) aimed at a fake upstream."""

from __future__ import annotations

from typing import Any

from hermes_core import Kernel
from hermes_core.testing import make_kernel
from tests.providers.upstream_fakes import FakeUpstream
from tests.providers.vendors import Vendor


def vendor_kernel(
    vendor: Vendor, upstream: FakeUpstream, *, plugins: tuple[str, ...] = ("tools",), **settings: Any
) -> Kernel:
    """Return a kernel whose default model is ``vendor``'s, served by ``upstream``.

    Storage is in memory unless ``settings`` say otherwise (then list ``sqlite`` in ``plugins``).
    """
    section = {"api_key": vendor.key, "base_url": vendor.root(upstream.url), "stall_timeout_s": 5.0}
    merged: dict[str, Any] = {
        "model": f"{vendor.name}:{vendor.model}",
        "providers": {vendor.name: section},
        "agent": {"provider_retries": 0},
    }
    merged.update(settings)
    return make_kernel(entry_points=[vendor.name, *plugins], settings=merged)
