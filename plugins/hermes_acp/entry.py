"""Pick the mode of ``hermes acp``: serve (default), ``--check`` or ``--setup``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hermes_acp.settings import AcpSettings
    from hermes_core import TransportContext


def data_dir(ctx: TransportContext[AcpSettings]) -> Path:
    """Return ``<data dir>``: the CLI store's data directory, else next to the config file.

    :param ctx: the transport context.
    :returns: the directory (not created).
    """
    paths = getattr(ctx.store, "paths", None)
    found = getattr(paths, "data_dir", None)
    if found is not None:
        return Path(found)
    config_path = getattr(ctx.store, "config_path", None)
    if config_path is not None:
        return Path(config_path).parent
    import platformdirs

    return Path(platformdirs.user_data_dir("hermes", appauthor=False))


async def run(ctx: TransportContext[AcpSettings]) -> int:
    """Run the selected mode.

    :param ctx: the transport context.
    :returns: the exit code.
    """
    if ctx.options.get("check"):
        from hermes_acp.check import run_check

        return await run_check(ctx)
    if ctx.options.get("setup"):
        from hermes_acp.setup import run_setup

        return await run_setup(ctx)
    from hermes_acp.serve import serve

    return await serve(ctx, data_dir(ctx), stdin_tty=os.isatty(0))
