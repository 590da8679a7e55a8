"""The plugin loader as embedders and tests see it: ``Kernel.create`` and ``make_kernel``.

Every plugin here is a throwaway class defined in the test, so each test builds its own world.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from hermes_core import (
    ConfigSection,
    Kernel,
    PluginError,
    PolicyDecision,
    ProviderSpec,
    Session,
    StorageSpec,
    ToolCallInfo,
    ToolCompleted,
    ToolDecision,
    ToolExecuting,
    ToolSpec,
    TransportContext,
    TransportSpec,
    hookimpl,
)
from hermes_core.loader import EntryPointSource
from hermes_core.testing import FakeProvider, make_kernel


def _provider(name: str) -> ProviderSpec:
    return ProviderSpec(name=name, summary=f"{name} for tests", factory=lambda settings, **kw: FakeProvider())


def _tool(name: str) -> ToolSpec:
    return ToolSpec(
        name=name, description="does nothing", schema={"type": "object"}, handler=lambda a, c: "ok"
    )


async def _serve(ctx: TransportContext) -> int:
    return 0


class ProviderPlugin:
    """Contributes one provider; ``hermes_plugin_name`` is how the loader names an object plugin."""

    def __init__(self, plugin_name: str, provider_name: str) -> None:
        self.hermes_plugin_name = plugin_name
        self.provider_name = provider_name

    @hookimpl
    def hermes_model_providers(self) -> ProviderSpec:
        return _provider(self.provider_name)


def lenient(*plugins: Any) -> Kernel:
    """Build a kernel that records plugin failures instead of raising."""
    return Kernel.create(entry_points=False, plugins=plugins, strict=False)


def failure_of(kernel: Kernel, plugin: str) -> str:
    record = kernel.registry.plugin(plugin)
    assert record is not None, f"no record for {plugin}"
    assert record.failed, f"{plugin} was expected to fail"
    return record.failed


# -- attribution -----------------------------------------------------------------------------------


def test_every_record_is_attributed_to_the_plugin_that_returned_it() -> None:
    class Alpha:
        hermes_plugin_name = "alpha"

        @hookimpl
        def hermes_model_providers(self) -> list[ProviderSpec]:
            return [_provider("a1"), _provider("a2")]

        @hookimpl
        def hermes_tools(self) -> ToolSpec:
            return _tool("alpha_tool")

    class Beta:
        hermes_plugin_name = "beta"

        @hookimpl
        def hermes_storage_backends(self) -> StorageSpec:
            return StorageSpec(name="beta_store", factory=lambda **kw: None)

        @hookimpl
        def hermes_transports(self) -> TransportSpec:
            return TransportSpec(name="beta-wire", summary="a test transport", factory=_serve)

        @hookimpl
        def hermes_tools(self) -> tuple[ToolSpec, ...]:
            return (_tool("beta_tool"),)

    registry = make_kernel(Alpha(), Beta()).registry
    contributed = {key: owner for key, owner in registry.owners.items() if owner != "core"}
    assert contributed == {
        ("providers", "a1"): "alpha",
        ("providers", "a2"): "alpha",
        ("tools", "alpha_tool"): "alpha",
        ("storage", "beta_store"): "beta",
        ("transports", "beta-wire"): "beta",
        ("tools", "beta_tool"): "beta",
    }
    assert set(registry.providers) == {"a1", "a2"} and set(registry.transports) == {"beta-wire"}
    alpha, beta = registry.plugin("alpha"), registry.plugin("beta")
    assert alpha is not None and alpha.hooks == ("hermes_model_providers", "hermes_tools")
    assert beta is not None and beta.source == "object" and not beta.first_party
    assert beta.hooks == ("hermes_storage_backends", "hermes_tools", "hermes_transports")


# -- a hook that raises ----------------------------------------------------------------------------


class Exploding:
    """Contributes a tool, then fails while declaring its providers."""

    hermes_plugin_name = "exploding"

    @hookimpl
    def hermes_tools(self) -> ToolSpec:
        return _tool("exploding_tool")

    @hookimpl
    def hermes_model_providers(self) -> ProviderSpec:
        raise RuntimeError("cannot reach the config")


def test_a_raising_hook_is_recorded_as_failed_in_lenient_mode() -> None:
    kernel = lenient(Exploding(), ProviderPlugin("steady", "steady"))
    reason = failure_of(kernel, "exploding")
    assert "hermes_model_providers" in reason and "cannot reach the config" in reason
    # Nothing of a failed plugin stays behind, not even what its healthy hooks returned.
    assert "exploding_tool" not in kernel.registry.tools
    assert "exploding" not in kernel.registry.owners.values()
    assert kernel.pm.get_plugin("exploding") is None
    assert "steady" in kernel.registry.providers
    assert [p.name for p in kernel.registry.failures] == ["exploding"]


def test_a_raising_hook_raises_plugin_error_in_strict_mode() -> None:
    with pytest.raises(PluginError, match="exploding") as caught:
        make_kernel(Exploding())
    assert isinstance(caught.value.__cause__, RuntimeError)


# -- duplicate names -------------------------------------------------------------------------------


def test_duplicate_provider_names_are_an_error_naming_both_plugins() -> None:
    with pytest.raises(PluginError) as caught:
        make_kernel(ProviderPlugin("first-plugin", "shared"), ProviderPlugin("second-plugin", "shared"))
    message = str(caught.value)
    assert "shared" in message and "first-plugin" in message and "second-plugin" in message


def test_duplicate_provider_names_keep_the_first_plugin_when_lenient() -> None:
    first, second = ProviderPlugin("first-plugin", "shared"), ProviderPlugin("second-plugin", "shared")
    kernel = lenient(first, second)
    assert kernel.registry.owners[("providers", "shared")] == "first-plugin"
    assert "first-plugin" in failure_of(kernel, "second-plugin")
    first_record = kernel.registry.plugin("first-plugin")
    assert first_record is not None and not first_record.failed


# -- names and hooks the loader refuses ------------------------------------------------------------


class RunTransport:
    hermes_plugin_name = "hijacker"

    @hookimpl
    def hermes_transports(self) -> TransportSpec:
        return TransportSpec(name="run", summary="shadows `hermes run`", factory=_serve)


def test_a_transport_named_like_a_builtin_command_is_recorded_as_failed() -> None:
    kernel = lenient(RunTransport())
    assert "reserved" in failure_of(kernel, "hijacker")
    assert "run" not in kernel.registry.transports
    with pytest.raises(PluginError, match="reserved"):
        make_kernel(RunTransport())


class Typo:
    hermes_plugin_name = "typo"

    @hookimpl
    def hermes_toolz(self) -> ToolSpec:
        return _tool("never_seen")

    @hookimpl
    def hermes_model_providers(self) -> ProviderSpec:
        return _provider("typo-provider")


def test_a_misspelt_hook_fails_registration() -> None:
    with pytest.raises(PluginError, match="hermes_toolz"):
        make_kernel(Typo())
    kernel = lenient(Typo())
    assert "hermes_toolz" in failure_of(kernel, "typo")
    assert kernel.pm.get_plugin("typo") is None
    assert "typo-provider" not in kernel.registry.providers  # its valid hooks are not collected either


# -- selecting entry points ------------------------------------------------------------------------


def test_an_unknown_entry_point_name_lists_what_is_installed() -> None:
    with pytest.raises(PluginError) as caught:
        Kernel.create(entry_points=["nonexistent"])
    message = str(caught.value)
    assert "nonexistent" in message
    assert "installed:" in message and "mock" in message and "sqlite" in message


def test_disabled_plugins_stay_out() -> None:
    kernel = Kernel.create(entry_points=["mock", "tools"], disabled=["mock", "no-such-plugin"], strict=True)
    assert kernel.registry.plugin("mock") is None
    assert "mock" not in kernel.registry.providers
    assert kernel.registry.plugin("tools") is not None and "read_file" in kernel.registry.tools
    assert any("no-such-plugin" in warning for warning in kernel.registry.warnings)


def test_entry_points_false_loads_no_plugin() -> None:
    registry = Kernel.create(entry_points=False, strict=True).registry
    assert registry.plugins == []
    assert (
        not registry.providers and not registry.storage and not registry.commands and not registry.transports
    )
    assert set(registry.tools) == {"request_secret"}  # the kernel's own tool is always there


def test_unselected_plugins_are_never_imported() -> None:
    code = (
        "import sys\n"
        "from hermes_core import Kernel\n"
        "Kernel.create(entry_points=['sqlite', 'mock'], disabled=['mock'], strict=True)\n"
        "tops = {m.split('.')[0] for m in sys.modules}\n"
        "print(sorted(t for t in tops if t.startswith('hermes_') and t != 'hermes_core'))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['hermes_sqlite']"


# -- policy hooks combined through a real turn -----------------------------------------------------


class Policy:
    """A policy plugin that gives the same verdict on every call and remembers what it saw."""

    def __init__(self, name: str, decision: PolicyDecision | None) -> None:
        self.hermes_plugin_name = name
        self.decision = decision
        self.seen: list[ToolCallInfo] = []

    @hookimpl
    def hermes_before_tool_call(self, session: Session, call: ToolCallInfo) -> PolicyDecision | None:
        self.seen.append(call)
        return self.decision


async def _read_a_file(tmp_path: Path, policies: Sequence[Policy]) -> tuple[list[Any], list[Any], list[Any]]:
    """Run one mock turn that asks for ``read_file a.txt``; return its decisions, starts and results."""
    (tmp_path / "a.txt").write_text("the secret plan\n", encoding="utf-8")
    kernel = make_kernel(*policies, entry_points=["mock", "tools"], settings={"model": "mock:echo"})
    async with kernel.running():
        session = await kernel.open_session(source="embed", owner="test", cwd=tmp_path)
        turn = await session.submit('[[tool read_file {"path":"a.txt"}]]', owner="test")
        events = [event async for event in turn.events()]
        assert (await turn.outcome).status == "complete"
    return (
        [e for e in events if isinstance(e, ToolDecision)],
        [e for e in events if isinstance(e, ToolExecuting)],
        [e for e in events if isinstance(e, ToolCompleted)],
    )


async def test_policy_results_are_combined_and_a_deny_wins(tmp_path: Path) -> None:
    allow = Policy("allower", PolicyDecision("allow", "reads are fine"))
    deny = Policy("denier", PolicyDecision("deny", "no reading today"))
    decisions, started, completed = await _read_a_file(tmp_path, [allow, deny])
    # Both plugins were asked (not first-result), about the call the model made.
    assert [c.name for c in allow.seen] == ["read_file"] and [c.name for c in deny.seen] == ["read_file"]
    assert deny.seen[0].paths == (tmp_path.resolve() / "a.txt",)
    (decision,) = decisions
    assert decision.decision == "deny"
    by_source = {name: (verdict, reason) for name, verdict, reason in decision.sources}
    assert by_source["allower"] == ("allow", "reads are fine")
    assert by_source["denier"] == ("deny", "no reading today")
    assert by_source["core"][0] == "deny"
    assert started == []  # a denied call never runs
    (result,) = completed
    assert result.is_error and "no reading today" in result.result_text
    assert "the secret plan" not in result.result_text


async def test_an_allow_and_an_abstention_let_the_call_run(tmp_path: Path) -> None:
    """The control for the test above: without the deny, the same call runs."""
    allow = Policy("allower", PolicyDecision("allow", "reads are fine"))
    abstain = Policy("abstainer", None)
    decisions, started, completed = await _read_a_file(tmp_path, [allow, abstain])
    (decision,) = decisions
    assert decision.decision == "allow"
    names = [name for name, _verdict, _reason in decision.sources]
    assert "allower" in names and "abstainer" not in names  # None is no vote
    assert len(started) == 1
    (result,) = completed
    assert not result.is_error and "the secret plan" in result.result_text


# -- config sections -------------------------------------------------------------------------------


class KnobsPlugin:
    """Declares the ``[knobs]`` table of config.toml."""

    def __init__(self, plugin_name: str = "knobs") -> None:
        self.hermes_plugin_name = plugin_name

    @hookimpl
    def hermes_config_sections(self) -> ConfigSection:
        return ConfigSection(name="knobs", summary="test knobs", settings_model="builtins:dict")


def test_config_sections_are_collected_and_attributed() -> None:
    registry = make_kernel(KnobsPlugin()).registry
    assert registry.config_sections["knobs"].summary == "test knobs"
    assert registry.owners[("config_sections", "knobs")] == "knobs"


def test_two_plugins_declaring_one_config_section_is_an_error_naming_both() -> None:
    with pytest.raises(PluginError, match="duplicate config_section 'knobs' from plugins") as caught:
        make_kernel(KnobsPlugin("one"), KnobsPlugin("two"))
    assert "'one'" in str(caught.value) and "'two'" in str(caught.value)


# -- entry points the caller already found (what the CLI passes) -----------------------------------


def _module(tmp_path: Path, name: str, source: str) -> None:
    (tmp_path / f"{name}.py").write_text(source, encoding="utf-8")
    sys.path.insert(0, str(tmp_path))


def test_discovered_entry_points_are_loaded_by_stevedore_without_reading_metadata() -> None:
    code = (
        "import sys\n"
        "from hermes_core import Kernel\n"
        "from hermes_core.loader import EntryPointSource\n"
        "found = {\n"
        "    'mock': EntryPointSource('mock', 'hermes_mock.plugin', 'hermes-kernel', '9.9'),\n"
        "    'sqlite': EntryPointSource('sqlite', 'hermes_sqlite.plugin', 'hermes-kernel', '9.9'),\n"
        "}\n"
        "kernel = Kernel.create(entry_points=['mock'], strict=True, discovered=found)\n"
        "r = kernel.registry.plugin('mock')\n"
        "print(r.distribution, r.version, r.first_party, 'mock' in kernel.registry.providers)\n"
        "print(sorted(m for m in ('stevedore', 'email.parser', 'hermes_sqlite') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    # stevedore loads them (it is handed the entry points); no header is parsed, nothing else loads.
    assert done.stdout.split("\n")[:2] == ["hermes-kernel 9.9 True True", "['stevedore']"]


def test_a_discovered_entry_point_that_fails_to_import_is_recorded(tmp_path: Path) -> None:
    _module(tmp_path, "loader_probe_ok", "from hermes_core import hookimpl\n")
    try:
        found = {
            "gone": EntryPointSource("gone", "no_such_module_anywhere.plugin", "third", "1.0"),
            "noattr": EntryPointSource("noattr", "loader_probe_ok:missing", "third", "1.0"),
            "ok": EntryPointSource("ok", "loader_probe_ok", "third", "1.0"),
        }
        kernel = Kernel.create(entry_points=True, strict=False, discovered=found)
        assert failure_of(kernel, "gone").startswith("import failed: ModuleNotFoundError:")
        assert failure_of(kernel, "noattr").startswith("import failed: AttributeError:")
        ok = kernel.registry.plugin("ok")
        assert ok is not None and not ok.failed and ok.distribution == "third" and not ok.first_party
        with pytest.raises(PluginError, match="unknown plugin"):
            Kernel.create(entry_points=["mock"], discovered=found)
    finally:
        sys.path.remove(str(tmp_path))
