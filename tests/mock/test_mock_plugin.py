"""The plugin's registration: entry point, hook, spec and cheap import."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points

import pluggy

import hermes_core.hookspecs as hookspecs
from hermes_core import ChatMessage, ChatRequest, Provider, ProviderSpec, TextChunk


def load_plugin_module() -> object:
    """Load the ``mock`` plugin through its ``hermes.plugins`` entry point."""
    (entry,) = entry_points(group="hermes.plugins", name="mock")
    return entry.load()


async def test_entry_point_hook_returns_a_working_spec() -> None:
    manager = pluggy.PluginManager(hookspecs.PROJECT)
    manager.add_hookspecs(hookspecs)
    manager.register(load_plugin_module(), name="mock")
    (spec,) = manager.hook.hermes_model_providers()
    assert isinstance(spec, ProviderSpec)
    assert spec.name == "mock"
    assert spec.requires_key is False
    provider = spec.factory({}, name="mock", preset=None)
    assert isinstance(provider, Provider)
    request = ChatRequest(model="script", messages=(ChatMessage(role="user", content="ping"),))
    text = "".join([c.text async for c in provider.stream(request) if isinstance(c, TextChunk)])
    assert text == "You said: ping"


def test_plugin_module_is_cheap_to_import() -> None:
    code = (
        "import sys, hermes_mock.plugin as p; p.hermes_model_providers(); "
        "heavy = [m for m in ('hermes_mock.provider', 'hermes_mock.replies', 'hermes_mock.directives', "
        "'aiohttp', 'pydantic') if m in sys.modules]; print(heavy)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
