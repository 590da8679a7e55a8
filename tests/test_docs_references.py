"""Section references point into ``docs/``, and every one of them lands on a real heading.

Code, tests and docs cite the reference pages as ``docs/reference/core.md#writer-lease`` (further
anchors of the same page follow as ``, #anchor``); Markdown pages link with relative paths. No
file cites a section of a document that is not in this repository.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.test_self_contained import ROOT, _tracked_text_files

SIGN = "\u00a7"  # the section sign, written so this file holds none
SECTION_CITATION = re.compile(SIGN + r"+\s?\d")
DOC_REF = re.compile(r"(?<![\w/.])(docs/[\w./-]+\.md)(#[\w-]+)?((?:,\s*#[\w-]+)*)")
# A design document named on its own, not as a path into this repository or a Markdown link target.
OUTSIDE_DOC = re.compile(
    r"(?<![\w/.\-])(?<!\]\()(?<!\"docs\" / \")"
    r"(agent-core(\.md)?|(acp|tui-gateway|api-server|architecture)\.md)\b"
)
MD_LINK = re.compile(r"\]\(([^)\s]+\.md)(#[\w-]+)?\)")
FENCE = re.compile(r"^\s*(```|~~~)")
THIS_TEST = "tests/test_docs_references.py"  # it holds examples of what it looks for


def _slug(title: str) -> str:
    text = re.sub(r"[^\w\- ]", "", title.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The heading anchors GitHub gives a Markdown file (duplicates get ``-1``, ``-2``, ...)."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    in_code = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            in_code = not in_code
            continue
        heading = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if in_code or not heading:
            continue
        base = _slug(heading.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def _sources() -> list[Path]:
    return [p for p in _tracked_text_files() if p.suffix in (".py", ".md")]


def test_no_file_cites_a_section_of_an_outside_document() -> None:
    found = []
    for path in _sources():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if SECTION_CITATION.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not found, "cite docs/ instead:\n" + "\n".join(found)


def test_no_file_names_a_design_document_that_is_not_in_the_repository() -> None:
    found = []
    for path in _sources():
        if path.relative_to(ROOT).as_posix() == THIS_TEST:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if OUTSIDE_DOC.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not found, "name a docs/ page instead:\n" + "\n".join(found)


def test_every_docs_reference_resolves_to_a_file_and_heading() -> None:
    cache: dict[Path, set[str]] = {}
    broken, checked = [], 0
    for path in _sources():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            refs: list[tuple[Path, list[str]]] = []
            for match in DOC_REF.finditer(line):
                more = re.findall(r"#[\w-]+", match.group(3))
                refs.append((ROOT / match.group(1), [a for a in [match.group(2), *more] if a]))
            if path.suffix == ".md":
                for match in MD_LINK.finditer(line):
                    if "://" not in match.group(1):
                        target = (path.parent / match.group(1)).resolve()
                        refs.append((target, [match.group(2)] if match.group(2) else []))
            for target, wanted in refs:
                checked += 1
                where = f"{path.relative_to(ROOT)}:{number}"
                if not target.is_file():
                    broken.append(f"{where}: no file {target}")
                    continue
                have = cache.setdefault(target, anchors(target))
                broken += [f"{where}: no heading {a} in {target.name}" for a in wanted if a[1:] not in have]
    assert checked > 300, checked  # the docs/ citations are all found
    assert not broken, "\n".join(broken)
