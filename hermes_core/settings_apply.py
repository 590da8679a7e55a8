"""Change the settings of a running kernel: reload them, or keep a new secret and reload.

``Kernel.apply_settings`` delegates here; the ``request_secret`` tool stores the user's answer
with :func:`store_secret`.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from hermes_core.errors import ConfigError, InvalidValue

if TYPE_CHECKING:
    from hermes_core.kernel import Kernel


async def apply_settings(kernel: Kernel, settings: Any) -> None:
    """Validate reloaded settings and put them in force; providers whose settings changed are rebuilt.

    :param kernel: the running kernel.
    :param settings: a mapping or ``CoreSettings``.
    """
    from hermes_core.settings import validate_settings

    new = validate_settings(settings)
    kernel.replace_settings(new)
    kernel.hub.configure(kernel.registry.providers, new)
    await kernel.models.settings_changed()


async def store_secret(kernel: Kernel, env_var: str, value: str) -> None:
    """Keep a secret in the settings store's env file, redact it from now on and reload the settings.

    :raises InvalidValue: the value contains a newline.
    :raises ConfigError: the kernel has no settings store.
    """
    if "\n" in value or "\r" in value:
        raise InvalidValue("value", message="a secret value cannot contain a newline")
    store = kernel.store
    if store is None:
        raise ConfigError("no settings store to keep the secret in")
    kernel.redactor.add(value)
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(kernel.executor, store.set_env, env_var, value)
    raw = await loop.run_in_executor(kernel.executor, store.load)
    await apply_settings(kernel, raw)
