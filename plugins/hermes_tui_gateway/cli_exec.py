"""``cli.exec``: run ``hermes <argv>`` non-interactively in its own process group
(docs/reference/tui-gateway.md#slash-commands-and-the-cli)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from typing import TYPE_CHECKING

from hermes_tui_gateway.params import GatewayError
from hermes_tui_gateway.wire_params_ops import CliExecParams, parse
from hermes_tui_gateway.wire_results_cmds import CliExecResult

if TYPE_CHECKING:
    from hermes_tui_gateway.gateway import Conn, Gateway, Params

OUTPUT_CAP = 48_000
_LAUNCH = "import sys; from hermes_cli.main import main; sys.argv[0] = 'hermes'; sys.exit(main(sys.argv[1:]))"


def _blocked(gw: Gateway, argv: list[str]) -> str | None:
    if "--help" in argv or "-h" in argv:
        return None
    if any(a == "--setup" or a.startswith("--setup") for a in argv):
        return "setup is interactive; run it in a terminal"
    long_running = {name for name, spec in gw.kernel.registry.transports.items() if spec.long_running}
    for arg in argv:
        if arg in long_running:
            return f"`hermes {arg}` is a long-running server; run it in a terminal"
    return None


async def cli_exec(gw: Gateway, conn: Conn, p: Params) -> CliExecResult:
    """Run the command and return ``{blocked, code, output, truncated?}``."""
    argv = p.get("argv")
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        raise GatewayError(4003, "argv must be list[str]")
    if any("\x00" in a for a in argv):
        # A process argument cannot hold one: it would be cut short, not passed on.
        raise GatewayError(4003, "argv entries must not contain a NUL character")
    q = parse(CliExecParams, p)
    timeout = min(q.timeout, 600.0)
    hint = _blocked(gw, argv)
    if hint is not None:
        return {"blocked": True, "code": -1, "output": "", "hint": hint}
    async with gw.cli_slots:
        try:
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-c",
                _LAUNCH,
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as exc:
            raise GatewayError(5017, f"cli.exec failed to spawn: {exc.strerror or exc}") from exc
        try:
            out, _ = await asyncio.wait_for(proc.communicate(), timeout)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(proc.wait(), 5)
            raise GatewayError(5016, f"cli.exec timed out after {timeout:g} s") from None
        finally:
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
    text = gw.kernel.redactor(out.decode("utf-8", errors="replace"))
    result: CliExecResult = {"blocked": False, "code": proc.returncode, "output": ""}
    if len(text) > OUTPUT_CAP:
        text = text[:OUTPUT_CAP]
        result["truncated"] = True
    result["output"] = text
    return result
