"""Which module registers each TUI-gateway method, so that most load on their first call.

Importing every method module (their params models, encoders, helpers) is a good part of the
gateway's start-up, and a host waits for it before its first answer. So the gateway registers
only :data:`EAGER` when it starts: what opening a session and prompting need. Every other method
is listed in :data:`LAZY_METHODS` with the module that registers it; the first call of any of
them imports that module, which registers all of its methods, before the call is routed as
usual. That includes the "off" answers of :mod:`~hermes_tui_gateway.feature_off` (thirty params
models and result types nobody needs to open a session); a real method of the same name, should
one be added, keeps its place whichever module loads first.
``tests/tui/test_lazy_methods.py`` checks this index against what the modules register.
"""

from __future__ import annotations

import importlib
from types import ModuleType

PACKAGE = "hermes_tui_gateway"

#: Registered when the gateway starts, in this order.
EAGER = ("methods_session", "methods_prompt")

#: Every module that registers methods, in registration order (``hermes schema export`` lists
#: them all).
ALL = (
    "feature_off",
    "methods_session",
    "methods_history",
    "methods_compress",
    "methods_state",
    "methods_prompt",
    "methods_config",
    "methods_commands",
    "methods_compose",
    "methods_env",
    "methods_subagents",
    "methods_trees",
    "methods_attach",
)

#: Method → the module (not in :data:`EAGER`) that registers it.
LAZY_METHODS: dict[str, str] = {
    # feature_off
    "billing.auto_reload": "feature_off",
    "billing.charge": "feature_off",
    "billing.charge_status": "feature_off",
    "billing.state": "feature_off",
    "billing.step_up": "feature_off",
    "browser.manage": "feature_off",
    "learning.delete": "feature_off",
    "learning.detail": "feature_off",
    "learning.edit": "feature_off",
    "learning.frames": "feature_off",
    "model.disconnect": "feature_off",
    "model.save_key": "feature_off",
    "pet.cells": "feature_off",
    "pet.gallery": "feature_off",
    "pet.info": "feature_off",
    "pet.info.meta": "feature_off",
    "pet.select": "feature_off",
    "rollback.diff": "feature_off",
    "rollback.list": "feature_off",
    "rollback.restore": "feature_off",
    "skills.manage": "feature_off",
    "skills.reload": "feature_off",
    "subscription.change": "feature_off",
    "subscription.preview": "feature_off",
    "subscription.resume": "feature_off",
    "subscription.state": "feature_off",
    "subscription.upgrade": "feature_off",
    "usage.bars": "feature_off",
    "voice.record": "feature_off",
    "voice.toggle": "feature_off",
    # methods_history
    "session.delete": "methods_history",
    "session.most_recent": "methods_history",
    "session.save": "methods_history",
    "session.undo": "methods_history",
    # methods_compress
    "session.compress": "methods_compress",
    # methods_state
    "gateway.ping": "methods_state",
    "session.active_list": "methods_state",
    "session.events.since": "methods_state",
    "session.status": "methods_state",
    "session.usage": "methods_state",
    "terminal.resize": "methods_state",
    # methods_config
    "config.get": "methods_config",
    "config.set": "methods_config",
    "model.options": "methods_config",
    "setup.status": "methods_config",
    # methods_commands
    "command.dispatch": "methods_commands",
    "command.resolve": "methods_commands",
    "commands.catalog": "methods_commands",
    "slash.exec": "methods_commands",
    # methods_compose
    "complete.path": "methods_compose",
    "complete.slash": "methods_compose",
    "input.detect_drop": "methods_compose",
    "paste.collapse": "methods_compose",
    "shell.exec": "methods_compose",
    # methods_env
    "cli.exec": "methods_env",
    "plugins.manage": "methods_env",
    "process.stop": "methods_env",
    "reload.env": "methods_env",
    "reload.mcp": "methods_env",
    "tools.configure": "methods_env",
    # methods_subagents
    "delegation.pause": "methods_subagents",
    "delegation.status": "methods_subagents",
    "subagent.interrupt": "methods_subagents",
    "subagent.list": "methods_subagents",
    "subagent.steer": "methods_subagents",
    "subagent.tail": "methods_subagents",
    # methods_trees
    "spawn_tree.list": "methods_trees",
    "spawn_tree.load": "methods_trees",
    "spawn_tree.save": "methods_trees",
    # methods_attach
    "clipboard.paste": "methods_attach",
    "image.attach": "methods_attach",
}


def load(name: str) -> ModuleType:
    """Import the method module ``name`` (short name, e.g. ``methods_env``)."""
    return importlib.import_module(f"{PACKAGE}.{name}")


def method_modules(names: tuple[str, ...] = ALL) -> tuple[ModuleType, ...]:
    """Return the modules whose ``register(gw)`` fill the method tables, in registration order."""
    return tuple(load(name) for name in names)
