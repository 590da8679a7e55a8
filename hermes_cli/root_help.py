"""The root ``hermes --help`` text, rendered without click.

``hermes --help`` has a 100 ms budget and importing click costs a quarter of it, so the root
help is rendered here from plain tables and both the fast path in :mod:`hermes_cli.main` and the
click group in :mod:`hermes_cli.app` print this same text. Nothing here imports a plugin,
stevedore, pydantic or click.
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hermes_cli.command_cache import CommandListing

DESCRIPTION = "Hermes: one AI coding agent behind ACP, the TUI gateway and an OpenAI-compatible API."
USAGE = "Usage: hermes [OPTIONS] COMMAND [ARGS]..."
WIDTH = 78

# The root options as help shows them; app.py declares the click options from the same strings.
VERSION_HELP = "Print the version and the distribution name, then exit."
PLUGIN_HELP = "Load only these plugins (repeatable; replaces HERMES_PLUGINS and the default set)."
WITH_PLUGIN_HELP = "Load this plugin as well (repeatable; adds to HERMES_PLUGINS or --plugin)."
NO_PLUGIN_HELP = "Do not load this plugin (repeatable)."
HELP_HELP = "Show this message and exit."
TUI_HELP = "Start the Ink TUI (upstream Hermes's terminal UI) on this Hermes's gateway."
MODEL_HELP = "The model for any command (PROVIDER:MODEL, e.g. mock:scenario:PATH; sets HERMES_MODEL)."
RECORD_HELP = "Write every call of a real model provider, chunk by chunk, to DIR (sets HERMES_RECORD_DIR)."
ROOT_OPTIONS: tuple[tuple[str, str], ...] = (
    ("--version", VERSION_HELP),
    ("--plugin NAME", PLUGIN_HELP),
    ("--with-plugin NAME", WITH_PLUGIN_HELP),
    ("--no-plugin NAME", NO_PLUGIN_HELP),
    ("--model REF", MODEL_HELP),
    ("--record DIR", RECORD_HELP),
    ("--tui", TUI_HELP),
    ("-h, --help", HELP_HELP),
)

# name → (module, attribute, one-line help); here so listing commands imports no command module.
BUILTINS: dict[str, tuple[str, str, str]] = {
    "chat": ("hermes_chat.command", "chat_command", "Talk to the agent here (what `hermes` alone runs)."),
    "run": ("hermes_cli.cmd_run", "run_command", "Run one non-interactive turn, or a slash command."),
    "plugins": ("hermes_cli.cmd_plugins", "plugins_command", "List plugins: version, hooks, failures."),
    "models": ("hermes_cli.cmd_models", "models_command", "Show the model catalog."),
    "config": ("hermes_cli.cmd_config", "config_group", "Read and write config.toml."),
    "sessions": ("hermes_cli.cmd_sessions", "sessions_group", "List and show stored sessions."),
    "keys": ("hermes_cli.cmd_api_keys", "keys_group", "Create, list and revoke scoped API keys."),
    "schema": (
        "hermes_cli.cmd_schema",
        "schema_group",
        "Export the wire protocols' schemas; compare two exports.",
    ),
    "scenario": (
        "hermes_cli.cmd_scenario",
        "scenario_group",
        "Scenario files for testing hosts: list, check, show as JSON.",
    ),
    "version": ("hermes_cli.cmd_version", "version_command", "Print the Hermes version and distribution."),
    "help": ("hermes_cli.cmd_help", "help_command", "Show this help, or the help of one command."),
}


def selected_plugins(
    allow: Sequence[str] = (), deny: Sequence[str] = (), add: Sequence[str] = ()
) -> list[str]:
    """Return the selected entry-point names, importing no plugin.

    The selection honours ``HERMES_PLUGINS`` / ``HERMES_DISABLE_PLUGINS`` (the real environment
    over ``.env``) and the ``--plugin`` / ``--with-plugin`` / ``--no-plugin`` flags.
    """
    from hermes_cli.dotenv import merged_environment, read_dotenv
    from hermes_cli.entry_points import installed_plugins
    from hermes_cli.paths import resolve_paths
    from hermes_cli.selection import select_plugins

    installed = installed_plugins()
    env = merged_environment(read_dotenv(resolve_paths().env_path).values, os.environ)
    selection = select_plugins(env, installed, allow, deny, add)
    if not isinstance(selection.entry_points, list):
        return list(installed)
    return [name for name in selection.entry_points if name in installed]


def plugin_commands(
    allow: Sequence[str] = (), deny: Sequence[str] = (), add: Sequence[str] = ()
) -> CommandListing:
    """Return the transport commands of the selected plugins (command name → summary).

    Read from what the CLI remembered the last time it loaded these plugins; see
    :mod:`hermes_cli.command_cache`.
    """
    from hermes_cli.command_cache import listing

    found = listing(selected_plugins(allow, deny, add))
    found.transports = {n: s for n, s in found.transports.items() if n not in BUILTINS}
    return found


def _definition_list(rows: Sequence[tuple[str, str]]) -> list[str]:
    """Lay out ``term  text`` rows with the text column aligned and wrapped."""
    term_width = min(max(len(term) for term, _ in rows), 30)
    lines: list[str] = []
    for term, text in rows:
        indent = 2 + term_width + 2
        wrapped = textwrap.wrap(text, max(WIDTH - indent, 20)) or [""]
        if len(term) > term_width:
            lines.append(f"  {term}")
            lines.extend(" " * indent + part for part in wrapped)
            continue
        lines.append(f"  {term.ljust(term_width)}  {wrapped[0]}".rstrip())
        lines.extend(" " * indent + part for part in wrapped[1:])
    return lines


def render_root_help(plugins: CommandListing) -> str:
    """Return the root help text.

    :param plugins: the transports (listed as commands) and the plugins that failed to load.
    """
    lines = [USAGE, ""]
    lines += textwrap.wrap(DESCRIPTION, WIDTH, initial_indent="  ", subsequent_indent="  ")
    lines += ["", "Options:", *_definition_list(ROOT_OPTIONS)]
    lines += ["", "Commands:", *_definition_list([(n, h) for n, (_, _, h) in BUILTINS.items()])]
    if plugins.transports:
        lines += ["", "Transports:", *_definition_list(list(plugins.transports.items()))]
    if plugins.failed:
        names = ", ".join(plugins.failed)
        lines += ["", *textwrap.wrap(f"Plugins that failed to load: {names} (see `hermes plugins`).", WIDTH)]
    return "\n".join(lines) + "\n"
