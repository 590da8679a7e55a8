"""Entering and leaving the plugins' ``hermes_lifespan`` context managers, one plugin at a time.

A lifespan that fails — its hook raises, returns something that is not an async context manager,
or raises while entering — is named in the error. Leniently the kernel starts without it and the
others are untouched; in strict mode start-up stops with a ``PluginError`` naming the plugin,
after the lifespans already entered have been left. A failure while leaving is logged with the
plugin's name and never keeps the other lifespans from being left.
"""

from __future__ import annotations

import logging
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from types import TracebackType
from typing import TYPE_CHECKING, Any

from hermes_core.errors import PluginError
from hermes_core.hook_calls import call_each

if TYPE_CHECKING:
    from hermes_core.kernel import Kernel

log = logging.getLogger("hermes.plugins")


class _Owned:
    """One plugin's lifespan; an error on the way out is logged with the plugin's name."""

    def __init__(self, plugin: str, cm: AbstractAsyncContextManager[Any]) -> None:
        self.plugin = plugin
        self.cm = cm

    async def __aenter__(self) -> None:
        await self.cm.__aenter__()

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool:
        try:
            return bool(await self.cm.__aexit__(kind, exc, tb))
        except Exception as error:
            if error is exc:  # the lifespan let the body's exception through: not its failure
                raise
            log.error("plugin %s failed while stopping (hermes_lifespan)", self.plugin, exc_info=error)
            return False


async def enter_lifespans(kernel: Kernel, stack: AsyncExitStack) -> None:
    """Call ``hermes_lifespan`` and enter each returned context manager on ``stack`` in call order.

    :raises PluginError: a lifespan failed and the kernel is strict.
    """
    for outcome in call_each(kernel.pm, "hermes_lifespan", kernel=kernel):
        error = outcome.error
        if error is None and outcome.value is not None:
            try:
                await stack.enter_async_context(_Owned(outcome.plugin, outcome.value))
            except Exception as exc:
                error = exc
        if error is None:
            continue
        reason = f"hermes_lifespan raised {type(error).__name__}: {error}"
        if kernel.strict:
            raise PluginError(f"plugin {outcome.plugin!r} failed: {reason}") from error
        log.error("plugin %s failed: %s; starting without it", outcome.plugin, reason, exc_info=error)
