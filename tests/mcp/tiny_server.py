"""A tiny MCP server built with the SDK's server API, for the MCP plugin's tests.

    python tiny_server.py                # stdio
    python tiny_server.py http PORT      # streamable HTTP on 127.0.0.1:PORT/mcp

``TINY_PID_FILE`` (when set) receives the server's pid, so tests can check it ended.
``TINY_WAIT_FOR`` (when set) names a file the server waits for before it answers anything, so a
test decides which of two servers is ready first.
"""

from __future__ import annotations

import base64
import os
import sys
import time

from mcp.server.mcpserver import MCPServer
from mcp.types import ImageContent, TextContent, ToolAnnotations

server = MCPServer("tiny")
READ_ONLY = ToolAnnotations(read_only_hint=True)


@server.tool(annotations=READ_ONLY)
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool(annotations=READ_ONLY)
def echo(text: str) -> str:
    """Repeat the text."""
    return f"echo: {text}"


@server.tool(annotations=ToolAnnotations(destructive_hint=True))
def write_note(text: str) -> str:
    """Pretend to write a note (a tool that changes things, not annotated read-only)."""
    return f"wrote {len(text)} characters"


@server.tool()
def die() -> str:
    """Exit the server process in the middle of the call."""
    os._exit(3)


@server.tool()
def hang() -> str:
    """Never answer."""
    while True:
        time.sleep(60)


@server.tool()
async def wait_cancel(marker: str) -> str:
    """Wait until the client cancels the call; ``marker``.started exists while it waits and
    ``marker`` is written once it is cancelled."""
    import anyio

    with open(f"{marker}.started", "w") as fh:
        fh.write("waiting\n")
    try:
        await anyio.sleep(3600)
    except anyio.get_cancelled_exc_class():
        with open(marker, "w") as fh:
            fh.write("cancelled\n")
        raise
    return "not cancelled"


# The bytes the ``picture`` tool returns as a PNG image (tests compare them).
PICTURE = b"\x89PNG\r\n\x1a\ntiny-picture"


@server.tool(annotations=READ_ONLY)
def picture() -> list[TextContent | ImageContent]:
    """Return a caption and a small PNG image."""
    data = base64.b64encode(PICTURE).decode("ascii")
    return [
        TextContent(type="text", text="a tiny picture"),
        ImageContent(type="image", data=data, mime_type="image/png"),
    ]


@server.tool(annotations=READ_ONLY)
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.resource("note://greeting", name="greeting", mime_type="text/plain")
def greeting() -> str:
    """A short text resource."""
    return "hello from tiny"


@server.prompt()
def review(topic: str) -> str:
    """Ask for a review of a topic."""
    return f"Please review {topic}."


if __name__ == "__main__":
    pid_file = os.environ.get("TINY_PID_FILE")
    if pid_file:
        with open(pid_file, "a") as fh:
            fh.write(f"{os.getpid()}\n")
    gate = os.environ.get("TINY_WAIT_FOR")
    while gate and not os.path.exists(gate):
        time.sleep(0.05)
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
