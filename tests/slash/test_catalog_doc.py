"""``docs/slash-commands.md`` documents exactly the first-party commands, as registered.

Each first-party command needs a ``### `/name` `` section whose bullet lines give its usage,
aliases, summary and the surfaces it is not available on, written exactly as its ``CommandSpec``
says. A documented command that is not registered is an error; commands of third-party plugins
are neither required nor checked.
"""

from __future__ import annotations

import re
from pathlib import Path

from hermes_core import CommandSpec, Registry
from hermes_core.testing import make_kernel

from .test_help import DeployPlugin

DOC = Path(__file__).resolve().parents[2] / "docs" / "slash-commands.md"
FIRST_PARTY_PLUGINS = ["mock", "tools", "slash", "model-switch"]
SECTION = re.compile(r"^### `/([^`]+)`\n(.*?)(?=^### |\Z)", re.MULTILINE | re.DOTALL)
FIELD = re.compile(r"^- (Usage|Aliases|Summary|Not available on): (.*)$", re.MULTILINE)


def documented(text: str) -> dict[str, dict[str, str]]:
    """Return each documented command's fields, keyed by name."""
    return {name: dict(FIELD.findall(body)) for name, body in SECTION.findall(text)}


def expected_fields(spec: CommandSpec) -> dict[str, str]:
    """Return the fields a command's section must show."""
    return {
        "Usage": f"`{spec.usage}`",
        "Aliases": ", ".join(f"`/{a}`" for a in spec.aliases) or "none",
        "Summary": spec.summary,
        "Not available on": ", ".join(sorted(spec.unavailable_on)) or "none",
    }


def first_party_commands(registry: Registry) -> dict[str, CommandSpec]:
    """Return the commands whose plugin ships with Hermes."""
    out: dict[str, CommandSpec] = {}
    for name, spec in registry.commands.items():
        record = registry.plugin(registry.owners[("commands", name)])
        if record is not None and record.first_party:
            out[name] = spec
    return out


def problems(text: str, registry: Registry) -> list[str]:
    """Return every disagreement between the page and the registry's first-party commands."""
    docs = documented(text)
    commands = first_party_commands(registry)
    found = [f"/{name} is registered but not documented" for name in sorted(set(commands) - set(docs))]
    found += [
        f"/{name} is documented but not a first-party command" for name in sorted(set(docs) - set(commands))
    ]
    for name in sorted(set(docs) & set(commands)):
        want = expected_fields(commands[name])
        for field, value in want.items():
            if docs[name].get(field) != value:
                found.append(
                    f"/{name}: {field} is {docs[name].get(field)!r} in the doc, {value!r} registered"
                )
    return found


def test_the_doc_matches_the_registry() -> None:
    kernel = make_kernel(entry_points=FIRST_PARTY_PLUGINS)
    assert len(first_party_commands(kernel.registry)) >= 20
    assert problems(DOC.read_text(encoding="utf-8"), kernel.registry) == []


def test_third_party_commands_are_ignored() -> None:
    kernel = make_kernel(DeployPlugin(), entry_points=FIRST_PARTY_PLUGINS)
    assert "deploy" in kernel.registry.commands
    assert problems(DOC.read_text(encoding="utf-8"), kernel.registry) == []


def test_the_check_notices_drift() -> None:
    registry = make_kernel(entry_points=FIRST_PARTY_PLUGINS).registry
    text = DOC.read_text(encoding="utf-8")
    without_undo = SECTION.sub(lambda m: "" if m.group(1) == "undo" else m.group(0), text)
    assert problems(without_undo, registry) == ["/undo is registered but not documented"]
    renamed = text.replace("- Aliases: `/fork`", "- Aliases: `/split`")
    assert problems(renamed, registry) == ["/branch: Aliases is '`/split`' in the doc, '`/fork`' registered"]
    extra = text + "\n### `/deploy`\n- Usage: `/deploy`\n"
    assert problems(extra, registry) == ["/deploy is documented but not a first-party command"]
