"""Enforce the import boundaries of docs/architecture.md#boundaries by reading the source with ``ast``.

The kernel, the CLI and each first-party plugin may only depend on what the design allows; a
plugin's ``plugin.py`` must stay cheap to import. Every failure names ``file:line`` and the
offending statement so it can be fixed without hunting.
"""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import hermes_core

ROOT = Path(__file__).resolve().parents[1]
CORE_DIR = ROOT / "hermes_core"
CLI_DIR = ROOT / "hermes_cli"
PLUGINS_DIR = ROOT / "plugins"

STDLIB = frozenset(sys.stdlib_module_names)
CORE_LIBRARIES = frozenset({"pluggy", "stevedore", "pydantic", "platformdirs"})
CLI_LIBRARIES = frozenset({"click", "tomli_w", "platformdirs", "uvloop"})
# Never in the kernel, whatever else changes: these are transport or CLI dependencies.
NEVER_IN_CORE = frozenset({"click", "aiohttp", "jsonrpcserver", "tomli_w", "uvloop", "hermes_cli"})
HEAVY = frozenset({"aiohttp", "pydantic", "jsonrpcserver"})
# The one kernel submodule a plugin may import by path (docs/architecture.md#boundaries).
PUBLIC_SUBMODULES = frozenset({"hermes_core.rpc"})
ENV_ATTRIBUTES = {"os": frozenset({"environ", "environb", "getenv", "getenvb"}), "sys": frozenset({"argv"})}


def shown(path: Path) -> Path:
    """Return a path relative to the repository root when it lies inside it."""
    return path.relative_to(ROOT) if path.is_relative_to(ROOT) else path


@dataclass(frozen=True)
class ImportUse:
    """One import statement (or literal ``import_module`` call) found in a source file.

    :param module: the absolute dotted module imported (relative imports resolved).
    :param names: for ``from m import a, b``, the imported names; empty for ``import m``.
    :param at_import_time: runs when the file is imported (not inside a function, not under
        ``if TYPE_CHECKING:``).
    """

    path: Path
    line: int
    module: str
    names: tuple[str, ...]
    at_import_time: bool
    text: str

    @property
    def top(self) -> str:
        """Return the top-level package of the imported module."""
        return self.module.split(".", 1)[0]

    def where(self) -> str:
        """Return ``file:line: statement`` for failure messages."""
        return f"{shown(self.path)}:{self.line}: {self.text}"


@dataclass(frozen=True)
class EnvRead:
    """A reference to ``os.environ``, ``os.getenv`` or ``sys.argv`` (or an alias of them)."""

    path: Path
    line: int
    text: str

    def where(self) -> str:
        """Return ``file:line: expression`` for failure messages."""
        return f"{shown(self.path)}:{self.line}: {self.text}"


def module_name(path: Path) -> str:
    """Return the dotted module name of a source file under the repository root or ``plugins/``."""
    base = PLUGINS_DIR if path.is_relative_to(PLUGINS_DIR) else ROOT
    parts = list(path.relative_to(base).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


class _Scanner(ast.NodeVisitor):
    """Collect imports and environment reads, remembering whether each runs at import time."""

    def __init__(self, path: Path, source: str, module: str) -> None:
        self.path = path
        self.lines = source.splitlines()
        self.module = module
        self.package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        self.imports: list[ImportUse] = []
        self.env_reads: list[EnvRead] = []
        self.aliases: dict[str, str] = {}  # local name -> "os" / "sys"
        self._deferred = 0  # > 0 inside a function body or an ``if TYPE_CHECKING:`` block

    def _text(self, node: ast.expr | ast.stmt) -> str:
        # ast.get_source_segment re-splits the whole file on every call; slice our own lines.
        first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
        chunk = self.lines[first : last + 1]
        if first == last and node.end_col_offset is not None:
            # Column offsets count UTF-8 bytes, not characters.
            raw = chunk[0].encode("utf-8")[node.col_offset : node.end_col_offset]
            chunk = [raw.decode("utf-8", errors="replace")]
        return " ".join(" ".join(chunk).split())

    def _add(self, node: ast.expr | ast.stmt, module: str, names: tuple[str, ...]) -> None:
        self.imports.append(
            ImportUse(self.path, node.lineno, module, names, self._deferred == 0, self._text(node))
        )

    def _deferring(self, node: ast.AST) -> None:
        self._deferred += 1
        self.generic_visit(node)
        self._deferred -= 1

    visit_FunctionDef = _deferring
    visit_AsyncFunctionDef = _deferring
    visit_Lambda = _deferring

    def visit_If(self, node: ast.If) -> None:
        if not _is_type_checking(node.test):
            self.generic_visit(node)
            return
        self.visit(node.test)
        self._deferred += 1
        for child in node.body:
            self.visit(child)
        self._deferred -= 1
        for child in node.orelse:
            self.visit(child)

    def learn_aliases(self, tree: ast.AST) -> None:
        """Note every local name bound to ``os`` or ``sys``, wherever the import sits."""
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    top = alias.name.split(".", 1)[0]
                    if top in ENV_ATTRIBUTES:
                        self.aliases[alias.asname or top] = top

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(node, alias.name, ())

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            base = self.package.split(".") if self.package else []
            base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
            module = ".".join([*base, *([node.module] if node.module else [])])
        else:
            module = node.module or ""
        names = tuple(alias.name for alias in node.names)
        self._add(node, module, names)
        for name in ENV_ATTRIBUTES.get(module, frozenset()) & set(names):
            self.env_reads.append(EnvRead(self.path, node.lineno, f"from {module} import {name}"))

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        called = (
            func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        )
        if called in ("import_module", "__import__") and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                self._add(node, first.value, ())
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        value = node.value
        if isinstance(value, ast.Name):
            owner = self.aliases.get(value.id)
            if owner is not None and node.attr in ENV_ATTRIBUTES[owner]:
                self.env_reads.append(EnvRead(self.path, node.lineno, self._text(node)))
        self.generic_visit(node)


@dataclass(frozen=True)
class Scan:
    """Everything found in one source file."""

    path: Path
    imports: tuple[ImportUse, ...]
    env_reads: tuple[EnvRead, ...]


def scan_file(path: Path, module: str | None = None) -> Scan:
    """Parse one file and return its imports and environment reads.

    :param module: its dotted name (derived from the path when omitted).
    """
    source = path.read_text(encoding="utf-8")
    scanner = _Scanner(path, source, module if module is not None else module_name(path))
    tree = ast.parse(source, filename=str(path))
    scanner.learn_aliases(tree)
    scanner.visit(tree)
    return Scan(path, tuple(scanner.imports), tuple(scanner.env_reads))


@functools.cache
def scan_tree(directory: Path) -> tuple[Scan, ...]:
    """Scan every ``.py`` file below a directory, in a stable order (once per test run)."""
    return tuple(
        scan_file(path) for path in sorted(directory.rglob("*.py")) if "__pycache__" not in path.parts
    )


def imports_in(directory: Path) -> Iterator[ImportUse]:
    """Yield every import below a directory."""
    for scan in scan_tree(directory):
        yield from scan.imports


def env_reads_in(directory: Path) -> Iterator[EnvRead]:
    """Yield every environment or argv read below a directory."""
    for scan in scan_tree(directory):
        yield from scan.env_reads


def report(problems: list[str], rule: str) -> str:
    """Format the failure message: the rule, then one ``file:line`` per offence."""
    return f"{rule} ({len(problems)} offence(s)):\n  " + "\n  ".join(problems)


PLUGIN_PACKAGES = sorted(p.name for p in PLUGINS_DIR.glob("hermes_*") if (p / "__init__.py").is_file())
PLUGIN_MODULES = [name for name in PLUGIN_PACKAGES if (PLUGINS_DIR / name / "plugin.py").is_file()]


# -- the scanner itself ----------------------------------------------------------------------------


def test_scanner_finds_every_kind_of_offence(tmp_path: Path) -> None:
    """The checks below only mean something if the scanner sees what they look for."""
    package = tmp_path / "hermes_demo"
    package.mkdir()
    source = package / "plugin.py"
    source.write_text(
        "from __future__ import annotations\n"
        "import os as _o\n"
        "from typing import TYPE_CHECKING\n"
        "import aiohttp\n"
        "from . import sibling\n"
        "from ..other import thing\n"
        "from sys import argv\n"
        "if TYPE_CHECKING:\n"
        "    import pydantic\n"
        "def later() -> None:\n"
        "    import jsonrpcserver\n"
        "    importlib.import_module('hermes_cli.main')\n"
        "    return _o.environ.get('X') or _o.getenv('Y')\n",
        encoding="utf-8",
    )
    found = scan_file(source, module="hermes_demo.plugin")
    by_module = {use.module: use for use in found.imports}
    assert by_module["aiohttp"].at_import_time and by_module["aiohttp"].line == 4
    assert by_module["hermes_demo"].names == ("sibling",)
    assert by_module["other"].names == ("thing",)
    assert not by_module["pydantic"].at_import_time
    assert not by_module["jsonrpcserver"].at_import_time
    assert not by_module["hermes_cli.main"].at_import_time
    assert sorted(read.line for read in found.env_reads) == [7, 13, 13]
    assert "argv" in found.env_reads[0].text


# -- hermes_core -----------------------------------------------------------------------------------


def test_core_imports_only_stdlib_pluggy_stevedore_pydantic_platformdirs() -> None:
    allowed = STDLIB | CORE_LIBRARIES | {"hermes_core"}
    assert not NEVER_IN_CORE & allowed  # guards the allowlist against a too-generous edit
    problems = [
        f"{use.where()}  -> {use.top!r} is not allowed in the kernel"
        for use in imports_in(CORE_DIR)
        if use.top not in allowed or use.top in NEVER_IN_CORE
    ]
    assert not problems, report(
        problems, "hermes_core imports only stdlib, pluggy, stevedore, pydantic, platformdirs"
    )


def test_core_never_reads_the_environment_or_argv() -> None:
    problems = [read.where() for read in env_reads_in(CORE_DIR)]
    assert not problems, report(problems, "hermes_core never reads os.environ, os.getenv or sys.argv")


def test_importing_hermes_core_does_not_import_pydantic() -> None:
    code = "import hermes_core, sys; print('pydantic' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "False", "`import hermes_core` pulled in pydantic"


# -- plugins ---------------------------------------------------------------------------------------


def _is_public_core_import(use: ImportUse) -> str | None:
    """Return why a ``hermes_core`` import breaks the public-names rule, or None if it is fine."""
    if use.module == "hermes_core":
        if not use.names:
            return None
        hidden = [name for name in use.names if name == "*" or name not in hermes_core.__all__]
        return f"{', '.join(hidden)} not in hermes_core.__all__" if hidden else None
    if use.module in PUBLIC_SUBMODULES or use.module.startswith(tuple(m + "." for m in PUBLIC_SUBMODULES)):
        return None
    return f"{use.module} is a private kernel module; import public names from hermes_core"


def test_public_name_rule_tells_public_from_private(tmp_path: Path) -> None:
    source = tmp_path / "plugin.py"
    source.write_text(
        "import hermes_core\n"
        "from hermes_core import ToolSpec, hookimpl, __version__\n"
        "from hermes_core import _EXPORTS\n"
        "from hermes_core.records import ToolCallInfo\n"
        "import hermes_core.loader\n"
        "from hermes_core.rpc import something\n",
        encoding="utf-8",
    )
    verdicts = {use.line: _is_public_core_import(use) for use in scan_file(source, module="x.plugin").imports}
    assert [line for line, why in verdicts.items() if why] == [3, 4, 5]
    assert "_EXPORTS" in str(verdicts[3]) and "hermes_core.records" in str(verdicts[4])


@pytest.mark.parametrize("package", PLUGIN_PACKAGES)
def test_plugin_imports_only_public_core_names(package: str) -> None:
    problems = []
    for use in imports_in(PLUGINS_DIR / package):
        if use.top == "hermes_core" and (why := _is_public_core_import(use)):
            problems.append(f"{use.where()}  -> {why}")
    assert not problems, report(problems, f"{package} imports only hermes_core's public names")


@pytest.mark.parametrize("package", PLUGIN_PACKAGES)
def test_plugin_never_imports_another_plugin_or_the_cli(package: str) -> None:
    problems = [
        f"{use.where()}  -> {use.top} belongs to someone else"
        for use in imports_in(PLUGINS_DIR / package)
        if use.top.startswith("hermes_") and use.top not in (package, "hermes_core")
    ]
    assert not problems, report(problems, f"{package} never imports another plugin or hermes_cli")


@pytest.mark.parametrize("package", PLUGIN_PACKAGES)
def test_plugin_never_reads_the_environment(package: str) -> None:
    problems = [read.where() for read in env_reads_in(PLUGINS_DIR / package) if "argv" not in read.text]
    assert not problems, report(problems, f"{package} never reads os.environ or os.getenv")


@pytest.mark.parametrize("package", PLUGIN_MODULES)
def test_plugin_module_defers_heavy_imports(package: str) -> None:
    found = scan_file(PLUGINS_DIR / package / "plugin.py")
    problems = [
        f"{use.where()}  -> import {use.top} inside the factory instead"
        for use in found.imports
        if use.at_import_time and use.top in HEAVY
    ]
    assert not problems, report(
        problems, f"{package}/plugin.py imports no aiohttp/pydantic/jsonrpcserver at module level"
    )


@pytest.mark.parametrize("package", PLUGIN_MODULES)
def test_importing_plugin_module_loads_nothing_heavy(package: str) -> None:
    """The same rule, observed: a module-level import of a sibling module could still drag them in."""
    code = (
        f"import sys, {package}.plugin; "
        f"print(','.join(sorted(m for m in {sorted(HEAVY)!r} if m in sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "", f"importing {package}.plugin loaded {done.stdout.strip()}"


# -- hermes_cli ------------------------------------------------------------------------------------


def test_cli_never_imports_a_plugin() -> None:
    problems = [
        f"{use.where()}  -> {use.top} is a plugin"
        for use in imports_in(CLI_DIR)
        if use.top.startswith("hermes_") and use.top not in ("hermes_core", "hermes_cli")
    ]
    assert not problems, report(problems, "hermes_cli imports nothing from plugins/")


def test_cli_imports_only_core_click_tomli_w_platformdirs_uvloop_and_stdlib() -> None:
    allowed = STDLIB | CLI_LIBRARIES | {"hermes_core", "hermes_cli"}
    problems = [
        f"{use.where()}  -> {use.top!r} is not allowed"
        for use in imports_in(CLI_DIR)
        if use.top not in allowed
    ]
    assert not problems, report(
        problems, "hermes_cli imports only hermes_core, click, tomli_w, platformdirs, uvloop, stdlib"
    )


# -- attribute access: plugins use the kernel's owners, never its internals ------------------------
# The rule (docs/architecture.md, "Boundaries"): in a plugin, ``<x>.kernel.storage`` / ``.hub`` /
# ``.broker`` / ``.pm`` (and the same on a name ``kernel``) never appear, and an ``obj._name``
# attribute is read or written only when ``obj`` is ``self`` or ``cls``, when the same module
# defines ``_name`` (a def, class, assignment, annotated field or parameter: its own objects), or
# when ``obj`` is a non-Hermes module the file imports (``os._exit``). Dunder names are not
# private. Another module of the same plugin gets a public method instead.

KERNEL_INTERNALS = frozenset({"storage", "hub", "broker", "pm"})


@dataclass(frozen=True)
class Reach:
    """One attribute access that crosses an owner's boundary."""

    path: Path
    line: int
    text: str
    why: str

    def where(self) -> str:
        return f"{shown(self.path)}:{self.line}: {self.text}  -> {self.why}"


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _names_defined(tree: ast.AST) -> set[str]:
    """Every private name a module defines: defs, classes, assignment targets, fields, params."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            found.add(node.id)
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Store)
            and isinstance(node.value, ast.Name)
            and node.value.id in ("self", "cls")
        ):
            # Only an object's own attributes: writing ``other._x`` defines nothing.
            found.add(node.attr)
        elif isinstance(node, ast.arg):
            found.add(node.arg)
    return {name for name in found if _is_private(name)}


def _foreign_modules(tree: ast.AST) -> set[str]:
    """Local names bound by ``import m`` of a module that is not Hermes's own."""
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if not alias.name.startswith("hermes_"):
                    bound.add(alias.asname or alias.name.split(".", 1)[0])
    return bound


def _is_kernel(node: ast.expr) -> bool:
    return (isinstance(node, ast.Name) and node.id == "kernel") or (
        isinstance(node, ast.Attribute) and node.attr == "kernel"
    )


def reaches_in(trees: dict[Path, tuple[str, ast.AST]]) -> list[Reach]:
    """Return every boundary-crossing attribute access in one package's parsed sources."""
    found: list[Reach] = []
    for path, (source, tree) in trees.items():
        lines = source.splitlines()
        own = _names_defined(tree)
        modules = _foreign_modules(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Attribute):
                continue
            text = lines[node.lineno - 1].strip()
            base = node.value
            if node.attr in KERNEL_INTERNALS and _is_kernel(base):
                why = f"kernel.{node.attr} is internal; use kernel.sessions/providers/questions"
                found.append(Reach(path, node.lineno, text, why))
            elif _is_private(node.attr):
                if isinstance(base, ast.Name) and (base.id in ("self", "cls") or base.id in modules):
                    continue
                if node.attr in own:
                    continue
                found.append(Reach(path, node.lineno, text, f"{node.attr} is private to its owner"))
    return sorted(found, key=lambda r: (str(r.path), r.line, r.why))


def _parse_package(directory: Path) -> dict[Path, tuple[str, ast.AST]]:
    out: dict[Path, tuple[str, ast.AST]] = {}
    for path in sorted(directory.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        out[path] = (source, ast.parse(source, filename=str(path)))
    return out


def test_attribute_rule_tells_reach_ins_from_own_attributes(tmp_path: Path) -> None:
    """The rule flags kernel internals and foreign privates, and lets a package's own names pass."""
    package = tmp_path / "hermes_demo"
    package.mkdir()
    (package / "a.py").write_text(
        "import os\n"
        "class Mine:\n"
        "    def __init__(self) -> None:\n"
        "        self._count = 0\n"
        "    def _bump(self) -> None: ...\n"
        "def use(gw, kernel, thing, mine: Mine) -> None:\n"
        "    gw.kernel.storage.get_session('x')\n"
        "    kernel.hub.has('mock')\n"
        "    gw.kernel.broker.get('r')\n"
        "    thing._persist([])\n"
        "    mine._bump()\n"
        "    mine._count += 1\n"
        "    thing.__class__\n"
        "    os._exit(0)\n"
        "    gw.storage\n",
        encoding="utf-8",
    )
    found = reaches_in(_parse_package(package))
    assert [(r.line, r.why.split()[0]) for r in found] == [
        (7, "kernel.storage"),
        (8, "kernel.hub"),
        (9, "kernel.broker"),
        (10, "_persist"),
    ]


@pytest.mark.parametrize("package", PLUGIN_PACKAGES)
def test_plugin_reaches_no_kernel_internal_or_foreign_private(package: str) -> None:
    problems = [reach.where() for reach in reaches_in(_parse_package(PLUGINS_DIR / package))]
    assert not problems, report(problems, f"{package} uses only public attributes of the kernel's objects")


# The JSON-RPC peer and the context of the request it is answering are one mechanism in two
# classes (hermes_core/rpc/_peer.py and _requests.py, _calls.py): each calls one private step of the other.
RPC_FRIENDS = frozenset({"_run_hook", "_mark_responded"})


def test_kernel_reaches_into_no_foreign_private() -> None:
    """Inside the kernel too, an object's private attributes are its own module's business: a
    session part, an owner or a helper uses another's public methods (docs/architecture.md,
    "Owners")."""
    problems: list[str] = []
    for path in sorted(CORE_DIR.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source, filename=str(path))
        for reach in reaches_in({path: (source, tree)}):
            attr = reach.why.split()[0]
            if "private to its owner" in reach.why and not (
                path.parent.name == "rpc" and attr in RPC_FRIENDS
            ):
                problems.append(reach.where())
    assert not problems, report(problems, "the kernel's modules touch only their own private attributes")


def _class_defines(cls: ast.ClassDef) -> set[str]:
    """What a class itself defines: methods, ``self.x =``, class-level values (and, on a
    dataclass, its annotated fields). A bare annotation on a plain class defines nothing: that
    is how a mixin declares a field someone else owns."""
    dataclass_ = any("dataclass" in ast.unparse(d) for d in cls.decorator_list)
    found: set[str] = set()
    for node in ast.walk(cls):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found.add(node.name)
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Store)
            and isinstance(node.value, ast.Name)
            and node.value.id in ("self", "cls")
        ):
            found.add(node.attr)
    for node in cls.body:
        if isinstance(node, ast.Assign):
            found |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            if node.value is not None or dataclass_:
                found.add(node.target.id)
        elif isinstance(node, ast.ClassDef):
            found.add(node.name)
    return found


def borrowed_privates(path: Path, source: str) -> list[str]:
    """``self._x`` uses in a class that neither it nor a base class in the same module defines."""
    tree = ast.parse(source, filename=str(path))
    classes = {node.name: node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
    found: list[str] = []
    lines = source.splitlines()
    for cls in classes.values():
        own = _class_defines(cls)
        for base in cls.bases:
            if isinstance(base, ast.Name) and base.id in classes:
                own |= _class_defines(classes[base.id])
        for node in ast.walk(cls):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "self"
                and _is_private(node.attr)
                and node.attr not in own
            ):
                text = lines[node.lineno - 1].strip()
                found.append(f"{shown(path)}:{node.lineno}: {text}  -> {cls.name} does not own {node.attr}")
    return found


def test_borrowed_private_rule_tells_a_mixin_from_an_owner(tmp_path: Path) -> None:
    """A mixin that reads a private its host class sets is caught; owners and dataclasses pass."""
    path = tmp_path / "parts.py"
    source = (
        "from dataclasses import dataclass\n"
        "class Mixin:\n"
        "    _rows: list[int]\n"
        "    def count(self) -> int:\n"
        "        return len(self._rows)\n"
        "class Owner:\n"
        "    _limit = 3\n"
        "    def __init__(self) -> None:\n"
        "        self._rows = []\n"
        "    def count(self) -> int:\n"
        "        return len(self._rows) + self._limit + self._helper()\n"
        "    def _helper(self) -> int:\n"
        "        return 0\n"
        "class Child(Owner):\n"
        "    def more(self) -> int:\n"
        "        return len(self._rows)\n"
        "@dataclass\n"
        "class Record:\n"
        "    _saved: int\n"
        "    def saved(self) -> int:\n"
        "        return self._saved\n"
    )
    found = borrowed_privates(path, source)
    assert [line.split(": ", 1)[0].rsplit(":", 1)[1] for line in found] == ["5"]


def test_kernel_classes_own_the_privates_they_use() -> None:
    """No part of a session (or any kernel class) works on private fields another class owns:
    each sets its own, and reaches the others through their methods (docs/architecture.md)."""
    problems: list[str] = []
    for path in sorted(CORE_DIR.rglob("*.py")):
        problems += borrowed_privates(path, path.read_text(encoding="utf-8"))
    assert not problems, report(problems, "every kernel class owns the private attributes it uses")


def test_kernel_module_stays_assembly_sized() -> None:
    """kernel.py only assembles: settings work, observers and tool services live in their own modules."""
    lines = (ROOT / "hermes_core" / "kernel.py").read_text(encoding="utf-8").count("\n")
    # 255: room for the owners of durable state (kernel.events, kernel.records), which it assembles;
    # 265: and for kernel.budgets made on first use (a session opens without spend limits).
    assert lines < 265, f"hermes_core/kernel.py has {lines} lines; move what is not assembly to an owner"


# -- hermes_chat: a client of the gateway protocol only ---------------------------------------------
# `hermes chat` talks to `hermes tui` like any third-party host (docs/chat.md), so it imports no
# kernel module and no plugin. It shares two pure helpers of the CLI, which import no kernel
# module themselves: where Hermes keeps its files and which event loop to run on.

CHAT_DIR = ROOT / "hermes_chat"
CHAT_LIBRARIES = frozenset({"click", "prompt_toolkit", "rich", "aiohttp"})
CHAT_SHARED = frozenset({"hermes_cli.paths", "hermes_cli.event_loop"})
# Libraries only the chat client loads; nothing else may import them (start-up budgets).
CHAT_ONLY = frozenset({"prompt_toolkit", "rich"})


def test_chat_imports_no_kernel_module_and_no_plugin() -> None:
    problems = [
        f"{use.where()}  -> the chat client speaks the gateway protocol; it never imports {use.module}"
        for use in imports_in(CHAT_DIR)
        if use.top.startswith("hermes_")
        and use.top != "hermes_chat"
        and not (use.top == "hermes_cli" and use.module in CHAT_SHARED)
    ]
    assert not problems, report(
        problems, "hermes_chat imports no hermes_core, no plugin, only shared CLI helpers"
    )


def test_chat_imports_only_stdlib_click_prompt_toolkit_rich_aiohttp() -> None:
    allowed = STDLIB | CHAT_LIBRARIES | {"hermes_chat", "hermes_cli"}
    problems = [
        f"{use.where()}  -> {use.top!r} is not allowed"
        for use in imports_in(CHAT_DIR)
        if use.top not in allowed
    ]
    assert not problems, report(
        problems, "hermes_chat imports only stdlib, click, prompt_toolkit, rich, aiohttp"
    )


def test_the_helpers_the_chat_shares_import_no_kernel() -> None:
    problems = []
    for module in sorted(CHAT_SHARED):
        path = ROOT / (module.replace(".", "/") + ".py")
        problems += [
            f"{use.where()}  -> {module} is shared with hermes_chat and must stay kernel-free"
            for use in scan_file(path).imports
            if use.top.startswith("hermes_") and use.module not in CHAT_SHARED
        ]
    assert not problems, report(problems, "the CLI helpers hermes_chat imports import no Hermes module")


def test_importing_every_chat_module_loads_no_kernel_module() -> None:
    """The same rule, observed in a fresh interpreter."""
    modules = sorted(module_name(path) for path in CHAT_DIR.rglob("*.py") if "__pycache__" not in path.parts)
    code = (
        f"import importlib, sys\nfor m in {modules!r}: importlib.import_module(m)\n"
        "found = [m for m in sys.modules if m.startswith('hermes_') and not m.startswith('hermes_chat')]\n"
        "print(','.join(sorted(found)))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    loaded = [m for m in done.stdout.strip().split(",") if m and m not in CHAT_SHARED and m != "hermes_cli"]
    assert loaded == [], f"importing hermes_chat loaded {loaded}"


def test_only_the_chat_imports_prompt_toolkit_and_rich() -> None:
    problems = [
        f"{use.where()}  -> {use.top} is for hermes_chat only (other commands' start-up is budgeted)"
        for directory in (CORE_DIR, CLI_DIR, PLUGINS_DIR)
        for use in imports_in(directory)
        if use.top in CHAT_ONLY
    ]
    assert not problems, report(problems, "prompt_toolkit and rich are imported by hermes_chat only")


# -- run_agent: a client of the kernel, like hermes_cli ---------------------------------------------

RUN_AGENT = ROOT / "run_agent.py"


def test_run_agent_imports_only_public_core_names_the_cli_and_the_launcher() -> None:
    allowed = STDLIB | {"hermes_core", "hermes_cli", "hermes_launcher"}
    problems = []
    for use in scan_file(RUN_AGENT).imports:
        if use.top not in allowed:
            problems.append(f"{use.where()}  -> {use.top!r} is not allowed (never a plugin)")
        elif use.top == "hermes_core" and (why := _is_public_core_import(use)):
            problems.append(f"{use.where()}  -> {why}")
    assert not problems, report(
        problems, "run_agent imports only hermes_core's public names, hermes_cli, stdlib"
    )


def test_run_agent_reaches_no_kernel_internal() -> None:
    source = RUN_AGENT.read_text(encoding="utf-8")
    problems = [reach.where() for reach in reaches_in({RUN_AGENT: (source, ast.parse(source))})]
    assert not problems, report(problems, "run_agent uses only public attributes of the kernel's objects")


def test_importing_run_agent_is_cheap() -> None:
    """The facade loads the kernel and plugins when an agent first runs, not at import."""
    heavy = ("hermes_cli", "pydantic", "aiohttp")
    code = f"import sys, run_agent; print(','.join(m for m in {heavy!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""


# Where a backend's name may be compared with a literal: the code that builds that backend.
BACKEND_NAMES = frozenset({"memory", "sqlite", "postgres", "redis"})
NAME_OWNERS = frozenset(
    {
        Path("hermes_core/storage_choice.py"),  # builds the kernel's own `memory` storage
        Path("plugins/hermes_api_server/bus.py"),  # builds the API's own in-process bus
    }
)
NAME_OWNER_DIRS = frozenset({"hermes_sqlite", "hermes_postgres", "hermes_redis"})


def backend_name_checks(path: Path) -> Iterator[str]:
    """Yield ``file:line`` of each comparison of a backend's name with a literal backend name."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        literal = any(isinstance(o, ast.Constant) and o.value in BACKEND_NAMES for o in operands)
        named = any(isinstance(o, ast.Attribute) and o.attr in ("backend", "name") for o in operands)
        if literal and named:
            yield f"{shown(path)}:{node.lineno}: {ast.unparse(node)}"


def test_no_backend_is_told_apart_by_its_name_outside_its_owner() -> None:
    """Callers ask a backend what it can do (``kernel.sessions.durable``, ``kernel.records.shared``,
    ``RunBus.shared``), never what it is called: a third-party backend must behave like the
    first-party one it stands in for (docs/architecture.md#who-owns-what-durable-state)."""
    found = []
    for folder in (CORE_DIR, CLI_DIR, PLUGINS_DIR):
        for path in sorted(folder.rglob("*.py")):
            rel = path.relative_to(ROOT)
            if rel in NAME_OWNERS or (rel.parts[0] == "plugins" and rel.parts[1] in NAME_OWNER_DIRS):
                continue
            found += backend_name_checks(path)
    assert not found, "checks of a backend's name instead of a capability:\n" + "\n".join(found)
