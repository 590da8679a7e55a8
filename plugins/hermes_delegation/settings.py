"""The keys of the ``[delegation]`` table, as a pydantic model for ``hermes config get/set`` and
the unknown-key warning (declared through ``hermes_config_sections``).

The kernel reads the table itself (``hermes_core.DelegationLimits``); this model mirrors it so the
CLI knows the keys, and ``tests/delegation/test_settings.py`` checks that the two agree.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

Positive = Annotated[int, Field(ge=1)]


class DelegationSettings(BaseModel):
    """Limits on delegated child agents (docs/delegation.md#limits)."""

    model_config = ConfigDict(extra="forbid")

    max_concurrent_children: Positive = 3
    max_spawn_depth: Positive = 1
    max_background_children: Positive = 2
    max_child_tool_rounds: Positive = 20
