"""The ACP harness (a temporary home, agents spawned with the ACP SDK) for the MCP tests."""

from tests.acp.conftest import home, spawn  # noqa: F401
