"""Every kernel name docs/architecture.md shows in backticks exists, so the map stays true.

Checked tokens (anything else in backticks, such as commands or config keys, is prose):

- ``hermes_core/...`` paths, and bare ``*.py`` file names, which must exist in the repository;
- ``hermes_core.x.y`` dotted names, which must import or resolve with ``getattr``;
- ``Name`` or ``Name.attr...`` where ``Name`` is CamelCase: ``Name`` must be a public name of
  ``hermes_core`` or a class defined in one of its modules (or one of the few outside classes
  listed in ``OUTSIDE``), and each attribute must exist on it (class attribute, method, property,
  dataclass field or an attribute its ``__init__`` assigns);
- ``kernel.owner.attr`` for the owners ``kernel.sessions`` / ``models`` / ``providers`` /
  ``questions`` and other ``kernel.x`` attributes, and ``module.name`` for kernel modules.
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import functools
import importlib
import pkgutil
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest

import hermes_core
from hermes_core.kernel import Kernel

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "architecture.md"
# Classes the page names that belong to libraries or to a plugin, not to hermes_core.
OUTSIDE = frozenset({"HookCaller", "NamedExtensionManager", "ThreadPoolExecutor", "FileSettingsStore"})
OWNERS = {
    "sessions": "Sessions",
    "models": "Models",
    "providers": "ProviderDirectory",
    "questions": "QuestionBroker",
    "events": "EventLogs",
    "records": "Records",
}
INSTANCES = {"kernel": "Kernel", "registry": "Registry", "session": "Session", "storage": "Storage"}
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


def tokens() -> list[str]:
    return sorted(set(re.findall(r"`([^`\n]+)`", PAGE.read_text(encoding="utf-8"))))


@functools.cache
def core_modules() -> dict[str, Any]:
    """Every module of hermes_core by its short and its dotted name."""
    found: dict[str, Any] = {}
    for info in pkgutil.walk_packages(hermes_core.__path__, "hermes_core."):
        module = importlib.import_module(info.name)
        found[info.name] = module
        found.setdefault(info.name.rpartition(".")[2], module)
    return found


@functools.cache
def plugin_defines_class(name: str) -> bool:
    pattern = re.compile(rf"^class {re.escape(name)}\b", re.M)
    return any(pattern.search(path.read_text()) for path in (ROOT / "plugins").rglob("*.py"))


def core_class(name: str) -> Any:
    if name in hermes_core.__all__:
        return getattr(hermes_core, name)
    for module in core_modules().values():
        value = getattr(module, name, None)
        if isinstance(value, type) and value.__module__.startswith("hermes_core"):
            return value
    return None


def _assigned_in_init(cls: type, attr: str) -> bool:
    import inspect

    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None or not hasattr(init, "__code__"):
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(init)))
        except (OSError, TypeError, SyntaxError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and node.attr == attr:
                return True
    return False


def has_attr(obj: Any, attr: str) -> bool:
    if hasattr(obj, attr):
        return True
    if isinstance(obj, type):
        if dataclasses.is_dataclass(obj) and attr in {f.name for f in dataclasses.fields(obj)}:
            return True
        return _assigned_in_init(obj, attr)
    return False


def check(token: str) -> str | None:
    """Return why ``token`` does not exist, or None (also for tokens that are not kernel names)."""
    if token.startswith("hermes_core/") or re.fullmatch(r"[A-Za-z0-9_*]+\.py", token):
        pattern = token if "/" in token else f"**/{token}"
        roots = (
            [ROOT] if "/" in token else [ROOT / d for d in ("hermes_core", "hermes_cli", "plugins", "tests")]
        )
        at_top = "/" not in token and (ROOT / token).is_file()  # a top-level module: run_agent.py
        return None if at_top or any(any(r.glob(pattern)) for r in roots) else "no such file"
    match = NAME.match(token)
    if match is None:
        return None
    parts = match.group(0).split(".")
    head, rest = parts[0], parts[1:]
    if head == "hermes_core":
        obj: Any = hermes_core
        for i, part in enumerate(rest):
            try:
                obj = importlib.import_module(".".join(parts[: i + 2]))
            except ImportError:
                if not has_attr(obj, part):
                    return f"hermes_core has no {'.'.join(parts[: i + 2])}"
                obj = getattr(obj, part)
        return None
    if head == "kernel" and rest and rest[0] in OWNERS:
        obj, rest = core_class(OWNERS[rest[0]]), rest[1:]
    elif head in INSTANCES and rest:
        obj = core_class(INSTANCES[head])
    elif head[:1].isupper() and head.isidentifier() and "_" not in head[1:2]:
        if head in OUTSIDE or head.isupper() or head in dir(builtins):
            return None
        obj = core_class(head)
        if obj is None:
            if plugin_defines_class(head):
                return None  # a plugin's class: the page names it where it describes that plugin
            return f"{head} is neither a hermes_core class nor a class a plugin defines"
    elif rest and head in core_modules() and not head.startswith("_"):
        obj = core_modules()[head]
    else:
        return None
    for part in rest:
        if not has_attr(obj, part):
            return f"{getattr(obj, '__name__', obj)} has no attribute {part!r}"
        value = getattr(obj, part, None)
        if value is None or isinstance(value, property) or (callable(value) and not isinstance(value, type)):
            break  # an instance attribute, a property or a method: nothing further to resolve statically
        obj = value
    return None


def test_the_checker_rejects_names_that_do_not_exist() -> None:
    assert check("Kernel.sessions") is None and check("kernel.sessions.exists") is None
    assert check("Kernel.no_such_method") is not None
    assert check("kernel.sessions.no_such") is not None
    assert check("NoSuchOwner") is not None
    assert check("hermes_core/no_such.py") is not None
    assert check("hermes_core.settings.no_such") is not None
    assert check("Session.once_model") is None  # assigned in __init__
    assert check("hermes config set") is None  # prose, not a name


def test_kernel_owner_table_matches_the_kernel() -> None:
    kernel = Kernel.create(entry_points=False)
    for attr, cls in OWNERS.items():
        if attr in ("providers",):
            assert isinstance(Kernel.__dict__[attr], property)
            continue
        assert type(getattr(kernel, attr)).__name__ == cls


@pytest.mark.parametrize("token", tokens())
def test_every_kernel_name_on_the_page_exists(token: str) -> None:
    assert check(token) is None, f"docs/architecture.md names `{token}`: {check(token)}"
