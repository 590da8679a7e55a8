"""``docs/plugin-hooks.md`` documents every hook of ``hermes_core.hookspecs`` with its exact signature.

A hook is any function of the hookspecs module named ``hermes_*`` that pluggy's marker flagged
(it sets ``hermes_spec`` on it). Each needs a ``## <hook name>`` heading whose first ``python``
code block holds its ``def`` line, identical to the real one. Example hookimpls on the page must
name real hooks and take only arguments the hook offers.
"""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from hermes_core import hookspecs

DOC = Path(__file__).resolve().parents[1] / "docs" / "plugin-hooks.md"
LEVEL2 = re.compile(r"^## +(.+?) *$", re.MULTILINE)
HOOK_TITLE = re.compile(r"`?(hermes_\w+)`?(?:\(.*\))?")
CODE_BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def hook_specs() -> dict[str, Callable[..., Any]]:
    """Return the hook specifications of the ``hermes`` project by name."""
    marker = f"{hookspecs.PROJECT}_spec"
    return {
        name: obj
        for name, obj in vars(hookspecs).items()
        if name.startswith("hermes_") and callable(obj) and hasattr(obj, marker)
    }


def signature_text(node: ast.FunctionDef) -> str:
    """Return ``def name(args) -> returns`` in a normalised spelling."""
    returns = f" -> {ast.unparse(node.returns)}" if node.returns is not None else ""
    return f"def {node.name}({ast.unparse(node.args)}){returns}"


def argument_names(node: ast.FunctionDef) -> list[str]:
    """Return every parameter name of a function definition, in order."""
    args = node.args
    names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    names += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
    return names


def real_definition(func: Callable[..., Any]) -> ast.FunctionDef:
    """Parse a hookspec's own source into its ``def`` node."""
    node = ast.parse(textwrap.dedent(inspect.getsource(func))).body[0]
    assert isinstance(node, ast.FunctionDef)
    return node


def documented_definition(code: str, name: str) -> ast.FunctionDef | None:
    """Parse a signature block: ``def name(...) -> T``, written without a body (or with ``: ...``)."""
    text = textwrap.dedent(code).strip()
    if not text.startswith(f"def {name}("):
        return None
    for candidate in (text, text.rstrip(":") + ": ..."):
        try:
            node = ast.parse(candidate).body[0]
        except SyntaxError:
            continue
        return node if isinstance(node, ast.FunctionDef) and node.name == name else None
    return None


def is_signature_block(code: str) -> bool:
    """Tell a bare ``def`` line without a body (checked by :func:`doc_problems`) from example code."""
    text = textwrap.dedent(code).strip()
    try:
        ast.parse(text)
    except SyntaxError:
        try:
            tree = ast.parse(text + ": ...")
        except SyntaxError:
            return False
        return len(tree.body) == 1 and isinstance(tree.body[0], ast.FunctionDef)
    return False


def sections(text: str) -> dict[str, str]:
    """Split the page into ``{hook name: section text}`` at its level-2 headings."""
    marks = list(LEVEL2.finditer(text))
    out: dict[str, str] = {}
    for index, mark in enumerate(marks):
        hook = HOOK_TITLE.fullmatch(mark.group(1))
        if hook:
            end = marks[index + 1].start() if index + 1 < len(marks) else len(text)
            out[hook.group(1)] = text[mark.end() : end]
    return out


def doc_problems(text: str, specs: Mapping[str, Callable[..., Any]]) -> list[str]:
    """Return everything wrong with the hook page (empty when it is right)."""
    problems: list[str] = []
    found = sections(text)
    for name, func in specs.items():
        real = real_definition(func)
        if name not in found:
            problems.append(f"{name}: no '## {name}' heading")
            continue
        blocks = CODE_BLOCK.findall(found[name])
        documented = documented_definition(blocks[0], name) if blocks else None
        if documented is None:
            problems.append(
                f"{name}: the first python block under its heading is not 'def {name}(...) -> ...'"
            )
            continue
        if argument_names(documented) != argument_names(real):
            problems.append(
                f"{name}: documented arguments {argument_names(documented)} != real {argument_names(real)}"
            )
        elif signature_text(documented) != signature_text(real):
            problems.append(
                f"{name}: documented '{signature_text(documented)}' != real '{signature_text(real)}'"
            )
    for name in found.keys() - specs.keys():
        problems.append(f"{name}: documented but not a hook in hermes_core.hookspecs")
    return problems


def example_problems(text: str, specs: Mapping[str, Callable[..., Any]]) -> list[str]:
    """Check every ``@hookimpl`` function in the page's code blocks against the real hooks."""
    problems: list[str] = []
    for code in CODE_BLOCK.findall(text):
        if is_signature_block(code):
            continue
        try:
            tree = ast.parse(code)
        except SyntaxError as exc:
            problems.append(f"a python block does not parse ({exc.msg}, line {exc.lineno}):\n{code}")
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef):
                continue
            if not any(ast.unparse(d).split("(")[0].endswith("hookimpl") for d in node.decorator_list):
                continue
            if node.name not in specs:
                problems.append(f"example hookimpl {node.name} is not a hook")
                continue
            allowed = set(argument_names(real_definition(specs[node.name])))
            extra = [a for a in argument_names(node) if a != "self" and a not in allowed]
            if extra:
                problems.append(f"example hookimpl {node.name} takes {extra}, which the hook does not offer")
    return problems


def test_every_hook_has_a_heading_with_its_exact_signature() -> None:
    specs = hook_specs()
    assert len(specs) >= 8, f"expected the hookspecs of docs/plugin-hooks.md, found {sorted(specs)}"
    problems = doc_problems(DOC.read_text(encoding="utf-8"), specs)
    assert not problems, "docs/plugin-hooks.md is out of date:\n  " + "\n  ".join(problems)


def test_example_hookimpls_use_real_hooks_and_arguments() -> None:
    problems = example_problems(DOC.read_text(encoding="utf-8"), hook_specs())
    assert not problems, "docs/plugin-hooks.md examples are wrong:\n  " + "\n  ".join(problems)


def test_the_checker_catches_a_missing_hook_and_a_renamed_argument() -> None:
    """Guard the guard: a page with a gap or a wrong argument must be reported."""
    specs = {name: hook_specs()[name] for name in ("hermes_tools", "hermes_on_event", "hermes_lifespan")}
    page = (
        "# Hooks\n\n"
        "## hermes_on_event\n\n```python\ndef hermes_on_event(session: Session, evt: Event) -> None\n```\n\n"
        "## hermes_lifespan\n\n```python\ndef hermes_lifespan(kernel: Kernel) -> None\n```\n\n"
        "## hermes_gone\n\n```python\ndef hermes_gone() -> None\n```\n\n"
        "```python\n@hookimpl\ndef hermes_toolz():\n    return []\n\n"
        "@hookimpl\ndef hermes_on_event(session, event, extra):\n    pass\n```\n"
    )
    problems = doc_problems(page, specs)
    assert any(p.startswith("hermes_tools: no ") for p in problems)
    assert any(p.startswith("hermes_on_event: documented arguments") and "'evt'" in p for p in problems)
    assert any(p.startswith("hermes_lifespan: documented 'def") for p in problems)  # return type differs
    assert any(p.startswith("hermes_gone: documented but not a hook") for p in problems)
    examples = example_problems(page, specs)
    assert any("hermes_toolz is not a hook" in p for p in examples)
    assert any("hermes_on_event takes ['extra']" in p for p in examples)
