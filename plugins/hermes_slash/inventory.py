"""Read-only inventory: ``/tools`` (what the model sees), ``/plugins`` and ``/version``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import hermes_core
from hermes_core import CommandResult
from hermes_slash.common import plural

if TYPE_CHECKING:
    from hermes_core import CommandContext, ToolSpec


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= 80 else line[:79] + "…"


async def tools_command(ctx: CommandContext) -> CommandResult:
    """Run ``/tools``: the tools offered to the model, grouped by toolset.

    Tools this session hides (``Session.set_tool_filter``) are left out. On the CLI, whose
    turns answer no questions, tools that need to ask the user are left out too.

    :param ctx: the dispatch context (a session is optional).
    :returns: one line per tool under its toolset; ``data.toolsets`` maps toolset to names and
        ``data.hidden`` lists the names left out.
    """
    registry = ctx.kernel.registry
    hidden = set(ctx.session.hidden_tools) if ctx.session is not None else set()
    shown: dict[str, list[ToolSpec]] = {}
    left_out: list[str] = []
    session_id = ctx.session.id if ctx.session is not None else None
    for spec in sorted(registry.tools_for(session_id), key=lambda s: s.name):
        if spec.name in hidden or (ctx.surface == "cli" and spec.needs):
            left_out.append(spec.name)
            continue
        shown.setdefault(spec.toolset, []).append(spec)
    data: dict[str, Any] = {
        "toolsets": {name: [s.name for s in specs] for name, specs in sorted(shown.items())},
        "hidden": left_out,
    }
    if not shown:
        return CommandResult(kind="exec", output="The model has no tools.", data=data)
    total = sum(len(specs) for specs in shown.values())
    lines = [f"The model sees {plural(total, 'tool')}:"]
    for toolset, specs in sorted(shown.items()):
        lines.append(f"{toolset}:")
        width = max(len(s.name) for s in specs)
        for spec in specs:
            lines.append(f"  {spec.name.ljust(width)}  {_first_line(spec.description)}")
    if left_out:
        lines.append(f"Hidden here: {', '.join(left_out)}")
    return CommandResult(kind="exec", output="\n".join(lines), data=data)


async def plugins_command(ctx: CommandContext) -> CommandResult:
    """Run ``/plugins``: every plugin the kernel tried to load, with its status.

    :param ctx: the dispatch context.
    :returns: one line per plugin; ``data.plugins`` holds name, version, first_party, hooks
        and ``status`` (``ok`` or the failure).
    """
    records = ctx.kernel.registry.plugins
    plugins: list[dict[str, Any]] = [
        {
            "name": r.name,
            "version": r.version,
            "first_party": r.first_party,
            "hooks": [h.removeprefix("hermes_") for h in r.hooks],
            "status": f"failed: {r.failed}" if r.failed else "ok",
        }
        for r in records
    ]
    if not plugins:
        return CommandResult(kind="exec", output="No plugins are loaded.", data={"plugins": []})
    width = max(len(p["name"]) for p in plugins)
    lines = [f"{plural(len(plugins), 'plugin')}:"]
    for p in plugins:
        origin = "first-party" if p["first_party"] else "third-party"
        version = f" {p['version']}" if p["version"] else ""
        hooks = ", ".join(p["hooks"]) or "no hooks"
        lines.append(f"  {p['name'].ljust(width)}  {p['status']}  ({origin}{version}; {hooks})")
    return CommandResult(kind="exec", output="\n".join(lines), data={"plugins": plugins})


async def version_command(ctx: CommandContext) -> CommandResult:
    """Run ``/version``: the Hermes version.

    :param ctx: the dispatch context.
    :returns: ``Hermes <version>``; ``data.version`` holds the bare version.
    """
    version = hermes_core.__version__
    return CommandResult(kind="exec", output=f"Hermes {version}", data={"version": version})
