"""Declare ``hermes pi``: pi's RPC mode (JSONL commands, responses and events on stdio).

Cheap to import: the server, pydantic and everything else load inside the factory, so building
the CLI or listing transports never pays for them (docs/reference/pi.md#command-line).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hermes_core import OptionSpec, TransportSpec, hookimpl

if TYPE_CHECKING:
    from hermes_core import TransportContext
    from hermes_pi.settings import PiSettings

THINKING_LEVELS = ("off", "minimal", "low", "medium", "high", "xhigh", "max")


async def _factory(ctx: TransportContext[PiSettings]) -> int:
    """Serve pi's RPC protocol until stdin ends or a signal; return the exit code.

    :param ctx: what the CLI hands every transport.
    :returns: the process exit code.
    """
    from hermes_pi.serve import serve

    return await serve(ctx)


OPTIONS = (
    OptionSpec("mode", ("rpc",), "the protocol on stdio; pi's rpc mode is the only one", default="rpc"),
    OptionSpec(
        "no-session",
        "bool",
        "keep the session in memory only (nothing is stored)",
        core={"storage.backend": "memory"},
    ),
    OptionSpec("session", "str", "open a session by its file path (sessionFile) or id"),
    OptionSpec("session-dir", "path", "where session files (locators) live", field="session_dir"),
    OptionSpec("provider", "str", "the provider of --model"),
    OptionSpec("model", "str", "the model: ID, provider/ID or provider:ID, with an optional :LEVEL"),
    OptionSpec("thinking", THINKING_LEVELS, "the thinking level (reasoning effort)"),
    OptionSpec("name", "str", "the session's display name"),
    OptionSpec("no-themes", "bool", "accepted for pi's consumers; themes do not exist here"),
    OptionSpec("version", "bool", "print the pi version whose RPC protocol this speaks, then exit"),
)

SPEC = TransportSpec(
    name="pi",
    summary="Serve pi's RPC mode on stdio (pi --mode rpc) for pi's clients",
    factory=_factory,
    options=OPTIONS,
    settings_model="hermes_pi.settings:PiSettings",
    config_section="pi",
    env={"approval_profile": "HERMES_PI_APPROVAL_PROFILE", "session_dir": "HERMES_PI_SESSION_DIR"},
)


@hookimpl
def hermes_transports() -> TransportSpec:
    """Return the ``pi`` transport."""
    return SPEC
