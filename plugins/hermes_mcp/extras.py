"""Resource and prompt helpers: four tools per server that offers resources or prompts.

``mcp_<server>_list_resources`` and ``mcp_<server>_read_resource`` appear when the server announces
the resources capability, ``mcp_<server>_list_prompts`` and ``mcp_<server>_get_prompt`` when it
announces prompts. All four only read, so they never ask, whatever the server's trust.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from hermes_core import ToolError, ToolResult, ToolSpec
from hermes_mcp.naming import tool_name
from hermes_mcp.results import describe_size

if TYPE_CHECKING:
    from hermes_core import ToolContext
    from hermes_mcp.runner import ServerRunner

_CURSOR = {"type": "object", "properties": {"cursor": {"type": "string", "description": "next page"}}}
_URI = {"type": "object", "properties": {"uri": {"type": "string"}}, "required": ["uri"]}
_PROMPT = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "arguments": {"type": "object", "additionalProperties": {"type": "string"}},
    },
    "required": ["name"],
}


def _next(result: Any) -> str:
    return f"\n(more: call again with cursor {result.next_cursor!r})" if result.next_cursor else ""


def _resources(result: Any) -> str:
    lines = []
    for r in result.resources:
        mime = f" ({r.mime_type})" if r.mime_type else ""
        lines.append(f"{r.uri} — {r.name}{mime}{f': {r.description}' if r.description else ''}")
    return ("\n".join(lines) or "(no resources)") + _next(result)


def _contents(result: Any) -> str:
    parts = []
    for item in result.contents:
        text = getattr(item, "text", None)
        if isinstance(text, str):
            parts.append(text)
        else:
            parts.append(f"[resource {item.uri} ({item.mime_type or 'binary'}, {describe_size(item.blob)})]")
    return "\n".join(parts) or "(empty resource)"


def _prompts(result: Any) -> str:
    lines = []
    for p in result.prompts:
        args = ", ".join(f"{a.name}{'*' if a.required else ''}" for a in p.arguments or [])
        lines.append(f"{p.name}{f' ({args})' if args else ''}{f': {p.description}' if p.description else ''}")
    return ("\n".join(lines) or "(no prompts)") + _next(result)


def _messages(result: Any) -> str:
    out = [result.description] if result.description else []
    for message in result.messages:
        content = message.content
        text = getattr(content, "text", None)
        out.append(f"{message.role}: {text if isinstance(text, str) else f'[{content.type} content]'}")
    return "\n".join(out)


def _handler(runner: ServerRunner, op: str, render: Callable[[Any], str]) -> Any:
    async def handler(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        if op == "read_resource" and not isinstance(args.get("uri"), str):
            raise ToolError("read_resource needs a uri (a string)")
        if op == "get_prompt" and not isinstance(args.get("name"), str):
            raise ToolError("get_prompt needs a name (a string)")
        return ToolResult(render(await runner.request(op, dict(args))))

    return handler


def helper_specs(runner: ServerRunner, capabilities: Any) -> list[tuple[str, ToolSpec]]:
    """The helper tools for what ``capabilities`` (the server's) announce, each with its short
    name (``list_resources``…), which ``include`` / ``exclude`` lists use."""
    server = runner.name
    table: list[tuple[str, str, Mapping[str, Any], Callable[[Any], str]]] = []
    if getattr(capabilities, "resources", None) is not None:
        table += [
            ("list_resources", f"List the resources MCP server {server} offers.", _CURSOR, _resources),
            ("read_resource", f"Read one resource of MCP server {server} by its uri.", _URI, _contents),
        ]
    if getattr(capabilities, "prompts", None) is not None:
        table += [
            ("list_prompts", f"List the prompts MCP server {server} offers.", _CURSOR, _prompts),
            ("get_prompt", f"Get one prompt of MCP server {server} with its arguments.", _PROMPT, _messages),
        ]
    return [
        (
            op,
            ToolSpec(
                name=tool_name(server, op),
                description=description,
                schema=schema,
                handler=_handler(runner, op, render),
                kind="read",
                title=f"{server}: {op.replace('_', ' ')}",
                toolset=f"mcp:{server}",
                emoji="🔌",
            ),
        )
        for op, description, schema, render in table
    ]
