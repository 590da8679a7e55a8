"""What the kernel itself provides to tools: ``request_secret``, local file access, group kill."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from concurrent.futures import Executor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_core.tools import ToolContext, ToolError, ToolSpec

if TYPE_CHECKING:
    from hermes_core.registry import Registry

_ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"


class LocalFileAccess:
    """Reads and writes files on this machine (the default ``FileAccess``)."""

    def read_text(self, path: Path) -> str:
        try:
            data = Path(path).read_bytes()
        except FileNotFoundError as exc:
            raise ToolError(f"no such file: {path}") from exc
        except IsADirectoryError as exc:
            raise ToolError(f"is a directory, not a file: {path}") from exc
        except OSError as exc:
            raise ToolError(f"cannot read {path}: {exc.strerror}") from exc
        if b"\x00" in data[:8192]:
            raise ToolError(f"refusing to read a binary file: {path}")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ToolError(f"refusing to read a binary (non UTF-8) file: {path}") from exc

    def write_text(self, path: Path, text: str) -> None:
        target = Path(path)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(f".{target.name}.hermes-tmp")
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, target)
        except OSError as exc:
            raise ToolError(f"cannot write {path}: {exc.strerror}") from exc


def kill_group(proc: subprocess.Popen[Any], grace: float) -> None:
    """Stop a process group: SIGTERM, wait ``grace`` seconds, then SIGKILL."""
    if proc.poll() is not None:
        return
    try:
        pgid = os.getpgid(proc.pid)
    except ProcessLookupError:
        return
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        time.sleep(0.02)
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=1)
    except subprocess.TimeoutExpired:
        pass


async def _request_secret(args: dict[str, Any], ctx: ToolContext) -> str:
    import re

    env_var = args.get("env_var")
    prompt = args.get("prompt") or f"Enter {env_var}"
    if not isinstance(env_var, str) or not re.match(_ENV_NAME, env_var):
        raise ToolError("env_var must be an environment variable name like OPENAI_API_KEY")
    value = await ctx.ask_async("secret", env_var=env_var, prompt=str(prompt))
    if not value:
        return f"skipped: the user did not provide {env_var}"
    if "\n" in value or "\r" in value:
        raise ToolError("the value contains a newline; nothing was stored")
    kernel = getattr(ctx, "_kernel", None)
    if kernel is None:
        raise ToolError("secrets cannot be stored here")
    from hermes_core.settings_apply import store_secret

    await store_secret(kernel, env_var, value)
    return f"stored: {env_var} is set for this and later sessions"


def kill_groups(executor: Executor, procs: list[Any]) -> None:
    """Kill the process groups of ``procs`` on ``executor`` (never blocking) and empty the list."""
    for proc in list(procs):
        executor.submit(kill_group, proc, 0.5)
    procs.clear()


def register_core_tools(registry: Registry) -> None:
    """Add the kernel's own tools to ``registry`` unless a plugin registered one of that name."""
    spec = request_secret_spec()
    if spec.name not in registry.tools:
        registry.tools[spec.name] = spec
        registry.owners[("tools", spec.name)] = "core"


def request_secret_spec() -> ToolSpec:
    """Return the kernel's own ``request_secret`` tool."""
    return ToolSpec(
        name="request_secret",
        description=(
            "Ask the user for a secret such as an API key and store it as an environment variable in "
            "Hermes' .env file. The value is never shown to you; the result says whether it was stored."
        ),
        schema={
            "type": "object",
            "properties": {
                "env_var": {"type": "string", "description": "variable name, e.g. OPENAI_API_KEY"},
                "prompt": {"type": "string", "description": "what to tell the user"},
            },
            "required": ["env_var"],
        },
        handler=_request_secret,
        kind="other",
        title=lambda a: f"Request secret {a.get('env_var', '')}",
        toolset="core",
        needs=frozenset({"secret"}),
    )
