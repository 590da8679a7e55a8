"""pi's ``bash`` and ``abort_bash`` commands (docs/reference/pi.md#bash)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hermes_pi.wire import Command

if TYPE_CHECKING:
    from hermes_pi.host import PiHost


async def bash(host: PiHost, cmd: Command) -> dict[str, Any]:
    """``bash``: run a shell command in the workspace, streaming ``bash_execution_update``."""
    command = cmd.text("command")
    exclude = cmd.flag("excludeFromContext", default=False)
    head: dict[str, Any] = {"type": "bash_execution_update"}
    if cmd.id is not None:
        head["id"] = cmd.id

    def on_chunk(text: str) -> None:
        host.send({**head, "delta": text})

    record = await host.bash.run(command, host.session.cwd, exclude, on_chunk)
    return record.result()


async def abort_bash(host: PiHost, cmd: Command) -> None:
    """``abort_bash``: stop the running command (its result says ``cancelled``)."""
    host.bash.abort()
