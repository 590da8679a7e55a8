"""The keys of one ``[mcp_servers.NAME]`` table, as a pydantic model for ``hermes config get/set``
and the unknown-key warning (declared through ``hermes_config_sections``).

The servers themselves are read by :func:`hermes_mcp.config.from_table`, which reports a bad table
in the log and leaves that server out; this model only tells the CLI which keys exist and what
each takes. ``tests/mcp/test_config.py`` checks that both know the same keys.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from hermes_mcp.config import DEFAULT_CONNECT_TIMEOUT_S, DEFAULT_TIMEOUT_S

Seconds = Annotated[float, Field(gt=0)]


class ServerTable(BaseModel):
    """One MCP server: ``command`` (stdio) or ``url`` (streamable HTTP), see docs/mcp.md."""

    model_config = ConfigDict(extra="forbid")

    command: str | None = Field(default=None, min_length=1)
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = Field(default=None, pattern=r"^https?://")
    headers: dict[str, str] = Field(default_factory=dict)
    timeout_s: Seconds = DEFAULT_TIMEOUT_S
    connect_timeout_s: Seconds = DEFAULT_CONNECT_TIMEOUT_S
    include: list[str] | None = None
    exclude: list[str] = Field(default_factory=list)
    trust: Literal["full", "untrusted"] = "untrusted"
    enabled: bool = True
