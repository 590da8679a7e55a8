"""The ``[delegation]`` model ``hermes config`` checks keys with agrees with the limits the kernel
reads from the same table."""

from __future__ import annotations

import dataclasses

from hermes_core import DelegationLimits
from hermes_delegation.settings import DelegationSettings


def test_the_cli_model_matches_the_kernels_limits() -> None:
    limits = DelegationLimits()
    assert DelegationSettings().model_dump() == dataclasses.asdict(limits)
    for name in DelegationSettings.model_fields:
        DelegationLimits.from_section({name: 1})  # every key the CLI accepts, the kernel does too
