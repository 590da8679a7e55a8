#!/usr/bin/env python3
"""Rewrite section citations of documents outside this repository into links to ``docs/``.

Code, tests and docs once cited design contracts that never lived in this repository, as
``agent-core <sign>7.2``, ``acp.md <sign>2.3``, ``tui-gateway.md <sign>3.2``, ``api-server.md
<sign>7.4`` or, inside a protocol's own files, a bare ``<sign>3.2`` (where ``<sign>`` is the
section sign, U+00A7). This script replaces every such citation in ``*.py`` and ``*.md`` files with
the ``docs/`` page and heading anchor that now covers the section, using :data:`MAPPING`.

It is safe to run again at any time (a rewritten file has no citation left, so nothing changes)
and walks the whole tree, so files that moved are found where they are now. A bare citation takes
its document from the file's place: ``acp`` for ``plugins/hermes_acp`` and ``tests/acp``, ``tui`` for
the TUI gateway, ``api`` for the API server, the core otherwise.

Usage: ``python tools/rewrite_citations.py [--check] [ROOT]``. ``--check`` rewrites nothing and
exits 1 when a citation is left. Standard library only.
"""

from __future__ import annotations

import argparse
import io
import os
import re
import sys
import tokenize
from pathlib import Path

SIGN = "\u00a7"

CORE = "docs/reference/core.md"
ACP = "docs/reference/acp.md"
TUI = "docs/reference/tui-gateway.md"
API = "docs/reference/api-server.md"

#: (document, section) -> a docs page and heading anchor (or a page alone). A section missing
#: here falls back to its parent ("6.2.1" -> "6.2" -> "6").
MAPPING: dict[tuple[str, str], str] = {
    # agent-core: the kernel's contract.
    ("core", "1"): f"{CORE}#core-api",
    ("core", "2"): f"{CORE}#the-turn-loop",
    ("core", "2.1"): f"{CORE}#streaming",
    ("core", "2.2"): f"{CORE}#iteration-cap",
    ("core", "2.3"): f"{CORE}#busy-input-and-the-queue",
    ("core", "2.4"): f"{CORE}#steer",
    ("core", "2.5"): f"{CORE}#interrupt",
    ("core", "2.6"): f"{CORE}#provider-errors-and-retries",
    ("core", "2.7"): f"{CORE}#background-tasks-and-one-shot-calls",
    ("core", "3"): f"{CORE}#turn-outcomes",
    ("core", "4"): f"{CORE}#events",
    ("core", "5"): f"{CORE}#questions",
    ("core", "6"): f"{CORE}#approvals",
    ("core", "6.1"): f"{CORE}#approval-profiles",
    ("core", "6.2"): f"{CORE}#fixed-asks",
    ("core", "6.3"): f"{CORE}#combining-decisions",
    ("core", "6.4"): f"{CORE}#approval-keys-and-memory",
    ("core", "6.5"): f"{CORE}#denials-hold-for-the-turn",
    ("core", "7"): f"{CORE}#sessions-and-storage",
    ("core", "7.1"): f"{CORE}#session-ids",
    ("core", "7.2"): f"{CORE}#writer-lease",
    ("core", "7.3"): f"{CORE}#workspace",
    ("core", "7.4"): f"{CORE}#messages-and-the-projection",
    ("core", "7.5"): f"{CORE}#rewind-and-reconcile",
    ("core", "7.6"): f"{CORE}#branch-compress-titles-model-switch",
    ("core", "8"): f"{CORE}#usage",
    ("core", "9"): f"{CORE}#images",
    ("core", "10"): f"{CORE}#providers-and-models",
    ("core", "11"): "docs/slash-commands.md#where-commands-are-recognised",
    ("core", "12"): "docs/mock-provider.md",
    ("core", "13"): f"{CORE}#tools",
    ("core", "14"): f"{CORE}#settings",
    # acp.md: `hermes acp`.
    ("acp", "1"): f"{ACP}#the-process",
    ("acp", "1.1"): f"{ACP}#the-process",
    ("acp", "1.2"): f"{ACP}#start-up",
    ("acp", "1.3"): f"{ACP}#stdio-hygiene-and-shutdown",
    ("acp", "1.4"): f"{ACP}#self-check",
    ("acp", "1.5"): f"{ACP}#interactive-setup",
    ("acp", "2"): f"{ACP}#json-rpc",
    ("acp", "2.3"): f"{ACP}#inbound-dispatch",
    ("acp", "2.6"): f"{ACP}#error-codes",
    ("acp", "3"): f"{ACP}#initialize",
    ("acp", "4"): f"{ACP}#authentication",
    ("acp", "5"): f"{ACP}#sessions",
    ("acp", "5.1"): f"{ACP}#session-ids-and-cwd",
    ("acp", "5.2"): f"{ACP}#sessionnew",
    ("acp", "5.3"): f"{ACP}#sessionload",
    ("acp", "5.4"): f"{ACP}#sessionresume",
    ("acp", "5.5"): f"{ACP}#sessionlist",
    ("acp", "5.6"): f"{ACP}#sessionclose",
    ("acp", "5.7"): f"{ACP}#sessionfork",
    ("acp", "6"): f"{ACP}#modes-config-options-and-models",
    ("acp", "6.1"): f"{ACP}#modes",
    ("acp", "6.2"): f"{ACP}#config-options",
    ("acp", "6.3"): f"{ACP}#setting-the-mode-and-options",
    ("acp", "6.4"): f"{ACP}#legacy-models",
    ("acp", "7"): f"{ACP}#prompt-turns",
    ("acp", "7.1"): f"{ACP}#prompt-content",
    ("acp", "7.2"): f"{ACP}#one-turn-at-a-time",
    ("acp", "7.3"): f"{ACP}#streaming",
    ("acp", "7.4"): f"{ACP}#end-of-a-turn",
    ("acp", "8"): f"{ACP}#tool-calls",
    ("acp", "8.1"): f"{ACP}#kind-title-and-locations",
    ("acp", "8.2"): f"{ACP}#every-call-ends",
    ("acp", "8.3"): f"{ACP}#tool-call-content",
    ("acp", "8.4"): f"{ACP}#client-file-system",
    ("acp", "9"): f"{ACP}#permissions",
    ("acp", "9.2"): f"{ACP}#permission-options",
    ("acp", "10"): f"{ACP}#slash-commands",
    ("acp", "11"): f"{ACP}#cancellation",
    ("acp", "12"): f"{ACP}#settings",
    ("acp", "13"): ACP,
    ("acp", "14"): f"{ACP}#wire-invariants",
    # tui-gateway.md: `hermes tui`.
    ("tui", "1"): f"{TUI}#transport",
    ("tui", "1.1"): f"{TUI}#stdio",
    ("tui", "1.2"): f"{TUI}#websocket",
    ("tui", "1.3"): f"{TUI}#message-shapes",
    ("tui", "1.4"): f"{TUI}#the-ready-event",
    ("tui", "1.5"): f"{TUI}#concurrency-and-ordering",
    ("tui", "1.6"): f"{TUI}#malformed-input",
    ("tui", "1.7"): f"{TUI}#sequence-numbers-and-replay",
    ("tui", "1.8"): f"{TUI}#connections-and-disconnects",
    ("tui", "1.9"): f"{TUI}#per-transport-options",
    ("tui", "1.10"): f"{TUI}#settings",
    ("tui", "2"): f"{TUI}#shared-objects",
    ("tui", "2.1"): f"{TUI}#session-ids",
    ("tui", "2.2"): f"{TUI}#transcript-rows",
    ("tui", "2.3"): f"{TUI}#usage-object",
    ("tui", "2.4"): f"{TUI}#sessioninfo",
    ("tui", "2.5"): f"{TUI}#snapshot",
    ("tui", "3"): f"{TUI}#methods",
    ("tui", "3.1"): f"{TUI}#prompting",
    ("tui", "3.2"): f"{TUI}#rewind-edit-and-regenerate",
    ("tui", "3.3"): f"{TUI}#session-lifecycle",
    ("tui", "3.4"): f"{TUI}#answering-questions",
    ("tui", "3.5"): f"{TUI}#configuration-and-models",
    ("tui", "3.6"): f"{TUI}#slash-commands-and-the-cli",
    ("tui", "3.7"): f"{TUI}#environment-and-processes",
    ("tui", "3.8"): f"{TUI}#subagents",
    ("tui", "3.9"): f"{TUI}#terminal-and-attachments",
    ("tui", "4"): f"{TUI}#events",
    ("tui", "4.1"): f"{TUI}#event-envelope",
    ("tui", "4.2"): f"{TUI}#turn-stream-order",
    ("tui", "4.3"): f"{TUI}#event-catalog",
    ("tui", "4.4"): f"{TUI}#question-lifecycle",
    ("tui", "5"): "docs/protocols/tui-gateway.md#6-mapping-from-a-pi-style-rpc-client",
    ("tui", "6"): f"{TUI}#error-codes",
    ("tui", "7"): TUI,
    # api-server.md: `hermes api`.
    ("api", "1"): f"{API}#scope",
    ("api", "2"): f"{API}#start-up-and-settings",
    ("api", "2.1"): f"{API}#settings",
    ("api", "2.2"): f"{API}#api-keys-and-the-bind-guard",
    ("api", "2.3"): f"{API}#shutdown-and-restart",
    ("api", "3"): f"{API}#http-rules",
    ("api", "3.1"): f"{API}#authentication",
    ("api", "3.2"): f"{API}#error-envelope",
    ("api", "3.3"): f"{API}#limits-idempotency-and-extra-fields",
    ("api", "3.4"): f"{API}#cors-and-security-headers",
    ("api", "3.5"): f"{API}#session-headers",
    ("api", "3.6"): f"{API}#sse-streams",
    ("api", "3.7"): f"{API}#model-selection",
    ("api", "3.8"): f"{API}#questions-and-redaction",
    ("api", "3.9"): f"{API}#timestamps-and-ids",
    ("api", "4"): f"{API}#discovery",
    ("api", "4.1"): f"{API}#health-and-models",
    ("api", "4.2"): f"{API}#get-apimodeloptions",
    ("api", "4.3"): f"{API}#get-v1capabilities",
    ("api", "4.4"): f"{API}#get-openapijson",
    ("api", "5"): f"{API}#chat-completions",
    ("api", "5.1"): f"{API}#chat-request",
    ("api", "5.2"): f"{API}#chat-sessions",
    ("api", "5.3"): f"{API}#chat-response",
    ("api", "5.4"): f"{API}#chat-stream",
    ("api", "6"): f"{API}#responses",
    ("api", "6.1"): f"{API}#responses-request",
    ("api", "6.2"): f"{API}#chaining",
    ("api", "6.3"): f"{API}#response-object",
    ("api", "6.4"): f"{API}#responses-stream",
    ("api", "7"): f"{API}#runs",
    ("api", "7.1"): f"{API}#post-v1runs",
    ("api", "7.2"): f"{API}#run-status",
    ("api", "7.3"): f"{API}#run-lifecycle",
    ("api", "7.4"): f"{API}#run-events",
    ("api", "7.5"): f"{API}#steer-a-run",
    ("api", "7.6"): f"{API}#answer-a-runs-approval",
    ("api", "7.7"): f"{API}#stop-a-run",
    ("api", "8"): f"{API}#browser-control",
    ("api", "9"): f"{API}#persistence",
    ("api", "10"): f"{API}#error-codes",
    ("api", "11"): API,
}

#: Citations the mapping alone would render inaccurately, and citations of an architecture contract
#: by section name (not number); each is replaced as a whole phrase, before the mapping runs.
PHRASES: dict[str, str] = {
    f"(acp.md {SIGN}2, {SIGN}13 #1\u2013#6)": "(docs/reference/acp.md#json-rpc)",
    "but " + SIGN + "11 lists /model among the\n"
    "    # commands that answer SessionBusy while a turn runs, so every surface behaves alike.": (
        "but\n"
        "    # /model is busy-blocked: it answers SessionBusy while a turn runs, on every surface alike\n"
        "    # (docs/slash-commands.md#where-commands-are-recognised)."
    ),
    f"you need it to reconnect ({SIGN}4).": (
        "you need it to reconnect (see\n[section 4](#4-reconnecting-without-losing-events))."
    ),
    f"Run commands with `command.dispatch` ({SIGN}3.4).": (
        "Run commands with `command.dispatch` (see [section 3.4](#34-commands-and-settings))."
    ),
    '(architecture.md, "Transports and the CLI")': "(docs/plugin-hooks.md#hermes_transports)",
    '(architecture.md, "Hooks")': "(docs/plugin-hooks.md)",
    'of architecture.md ("Boundaries")': "of docs/architecture.md#boundaries",
    '(architecture.md, "the one named exception")': "(docs/architecture.md#boundaries)",
    "(architecture.md, style rule 7)": '(CONTRIBUTING.md, "Checks")',
    "    # architecture.md names two packages differently from their entry points.": (
        "    # Two packages are named differently from their entry points."
    ),
    "the hookspecs of architecture.md": "the hookspecs of docs/plugin-hooks.md",
    f'description="A {SIGN}10 code."': (
        'description="A code listed in docs/reference/api-server.md#error-codes."'
    ),
}

PAGES = {"core": CORE, "acp": ACP, "tui": TUI, "api": API}
DOC_NAMES = {
    "agent-core": "core",
    "acp": "acp",
    "tui-gateway": "tui",
    "api-server": "api",
}

_NUM = r"\d+(?:\.\d+)*"
_SEC = rf"{SIGN}\s?{_NUM}(?:\s?[-\u2013]\s?{SIGN}?\s?{_NUM})?"
_DOC = r"`?(?P<doc>agent-core|acp|tui-gateway|api-server)(?:\.md)?`?(?: contract)?,?\s*"
CITATION = re.compile(
    rf"(?:{_DOC})?(?P<secs>{SIGN}{SIGN}\s?{_NUM}(?:\s?[-\u2013,]\s?{_NUM})*"
    rf"|{_SEC}(?:\s*(?:,|/|\band\b)\s*{_SEC})*)"
)
_ONE = re.compile(rf"({_NUM})(?:\s?[-\u2013]\s?{SIGN}?\s?({_NUM}))?")
SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "__pycache__", ".mypy_cache", ".ruff_cache"}
SELF = {"tools/rewrite_citations.py", "tests/test_docs_references.py"}  # they hold examples


def default_doc(rel: str) -> str | None:
    """Return the document a bare citation in the file at ``rel`` refers to."""
    parts = rel.split("/")
    if parts[0] == "docs":
        return None  # a guide's bare "(<sign>4)" names its own section: fixed by hand
    for part in parts[:-1]:
        if part in ("hermes_acp", "acp"):
            return "acp"
        if part in ("hermes_tui_gateway", "tui"):
            return "tui"
        if part in ("hermes_api_server", "api"):
            return "api"
    if parts[-1].startswith("acp_"):
        return "acp"
    return "core"


def lookup(doc: str, section: str) -> str:
    """Return the target of one section, falling back to its parents, then to the page."""
    parts = section.split(".")
    while parts:
        target = MAPPING.get((doc, ".".join(parts)))
        if target:
            return target
        parts.pop()
    return PAGES[doc]


def _expand(doc: str, first: str, last: str | None) -> list[str]:
    if last is None:
        return [lookup(doc, first)]
    a, b = first.split("."), last.split(".")
    if len(a) > 1 and a[:-1] == b[:-1]:  # 7.1-7.7: the whole parent section
        return [lookup(doc, ".".join(a[:-1]))]
    if len(a) == 1 and len(b) == 1 and a[0].isdigit() and b[0].isdigit():
        return [lookup(doc, str(n)) for n in range(int(a[0]), int(b[0]) + 1)]
    return [lookup(doc, first), lookup(doc, last)]


def targets(doc: str, secs: str) -> list[str]:
    """Return the distinct targets of a citation's section list, in order."""
    found: list[str] = []
    if secs.startswith(SIGN * 2):  # "<sign><sign>4-8": several whole sections, the page
        found.append(PAGES[doc])
    else:
        for match in _ONE.finditer(secs.replace(SIGN, "")):
            found.extend(_expand(doc, match.group(1), match.group(2)))
    return list(dict.fromkeys(found))


def _heading_title(root: Path, target: str) -> str:
    page, _, anchor = target.partition("#")
    if not anchor:
        return page.removeprefix("docs/")
    path = root / page
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.startswith("#") and slug(line.lstrip("#").strip()) == anchor:
                return line.lstrip("#").strip().replace("`", "")
    return anchor.replace("-", " ")


def slug(title: str) -> str:
    """GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens."""
    text = title.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def render(root: Path, rel: str, found: list[str]) -> str:
    """Write targets as relative links in Markdown; in code as a docs path with its anchor.

    Further anchors of the same page follow as ``, #other-anchor``.
    """
    if rel.endswith(".md"):
        here = (root / rel).parent
        links = []
        for target in found:
            page, _, anchor = target.partition("#")
            href = os.path.relpath(root / page, here).replace(os.sep, "/")
            links.append(f"[{_heading_title(root, target)}]({href}{'#' + anchor if anchor else ''})")
        return ", ".join(links)
    pieces: list[str] = []
    last_page = None
    for target in found:
        page, _, anchor = target.partition("#")
        if page == last_page and anchor:
            pieces.append(f"#{anchor}")
        else:
            pieces.append(target)
        last_page = page
    return ", ".join(pieces)


def rewrite_text(root: Path, rel: str, text: str) -> tuple[str, int, list[str]]:
    """Return the new text, the number of citations rewritten and the ones left (bare in docs)."""
    count = 0
    left: list[str] = []
    default = default_doc(rel)
    for phrase, better in PHRASES.items():
        if phrase in text:
            count += text.count(phrase)
            text = text.replace(phrase, better)

    def replace(match: re.Match[str]) -> str:
        nonlocal count
        named = match.group("doc")
        doc = DOC_NAMES[named] if named else default
        if doc is None:
            left.append(match.group(0))
            return match.group(0)
        count += 1
        return render(root, rel, targets(doc, match.group("secs")))

    return CITATION.sub(replace, text), count, left


LIMIT = 110  # the project's line length (pyproject.toml, [tool.ruff])


def _text_lines(source: str) -> tuple[dict[int, int], dict[int, int]]:
    """Map lines inside triple-quoted strings to the string's column, and trailing comments to theirs."""
    spans: dict[int, int] = {}
    comments: dict[int, int] = {}
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        return spans, comments
    lines = source.splitlines()
    for tok in tokens:
        if tok.type == tokenize.COMMENT and lines[tok.start[0] - 1][: tok.start[1]].strip():
            comments[tok.start[0]] = tok.start[1]
        if tok.type != tokenize.STRING:
            continue
        body = tok.string.lstrip("rRbBuU")
        if not body.startswith(('"""', "'''")):
            continue
        (first, col), (last, _) = tok.start, tok.end
        if lines[first - 1][:col].strip():  # code before the string: not a docstring
            continue
        for number in range(first, last + 1):
            spans[number] = col
    return spans, comments


def _break_at(line: str, start: int) -> int:
    """Return the index of the last space before the limit that is a good place to break."""
    for index in range(min(LIMIT, len(line) - 1), start, -1):
        if line[index] == " " and line[index + 1 : index + 2] not in ("#", "") and line[index - 1] != " ":
            return index
    return -1


def _continues(line: str, prefix: str, is_comment: bool) -> str | None:
    """Return the text of ``line`` if it continues the paragraph a wrapped line left off, else None."""
    stripped = line.lstrip()
    if is_comment:
        if not line.startswith(prefix) or not prefix.strip():
            return None
        text = line[len(prefix) :]
    else:
        if line[: len(line) - len(stripped)] != prefix:
            return None
        text = stripped
    if not text.strip() or text[0] in " #:-*>" or text.startswith(('"""', "'''")) or text[0].isdigit():
        return None
    return text


def wrap_long_lines(source: str, changed: set[int]) -> tuple[str, list[int]]:
    """Wrap rewritten comment and docstring lines that went over the limit; return the rest.

    What a wrapped line pushes over goes to the start of the next line when that line continues
    the same paragraph (which is then wrapped in turn), else onto a line of its own.
    """
    spans, comments = _text_lines(source)
    lines = source.split("\n")
    changed = set(changed)
    out: list[str] = []
    too_long: list[int] = []
    for number, line in enumerate(lines, 1):
        if number not in changed or len(line) <= LIMIT:
            out.append(line)
            continue
        stripped = line.lstrip()
        indent = line[: len(line) - len(stripped)]
        if number in comments:  # a trailing comment moves above its code
            code, comment = line[: comments[number]].rstrip(), line[comments[number] :]
            moved, _ = wrap_long_lines(indent + comment, {1})
            out.extend([*moved.split("\n"), code])
            continue
        is_comment = stripped.startswith("#")
        if is_comment:
            marker = re.match(r"#:?\s*", stripped)
            prefix = indent + (marker.group(0) if marker else "# ")
            start = len(prefix)
        elif number in spans:
            col = spans[number]
            prefix = " " * col if line[:col].strip() == "" and stripped.startswith(('"""', "'''")) else indent
            if stripped.startswith(":"):
                prefix += "    "
            start = len(indent) + 4
        else:
            out.append(line)
            too_long.append(len(out))
            continue
        rest = line
        while len(rest) > LIMIT:
            cut = _break_at(rest, start)
            if cut < 0:
                break
            out.append(rest[:cut].rstrip())
            rest = prefix + rest[cut + 1 :].lstrip()
        following = lines[number] if number < len(lines) else ""
        same_text = is_comment or (number + 1 in spans and spans.get(number + 1) == spans.get(number))
        closes = rest.rstrip().endswith(('"""', "'''")) and not is_comment
        text = (
            _continues(following, prefix, is_comment) if same_text and not closes and rest != line else None
        )
        if text is not None:  # join the overflow with the next line of the paragraph
            lines[number] = prefix + rest[len(prefix) :].strip() + " " + text
            changed.add(number + 1)
            continue
        out.append(rest)
    return "\n".join(out), too_long


def walk(root: Path) -> list[Path]:
    """Every ``*.py`` and ``*.md`` file under ``root``, skipping virtualenvs and caches."""
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS and not d.startswith(".venv")]
        for name in filenames:
            if name.endswith((".py", ".md")):
                files.append(Path(dirpath) / name)
    return sorted(files)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="report only; exit 1 if any is left")
    parser.add_argument("root", nargs="?", default=str(Path(__file__).resolve().parent.parent))
    args = parser.parse_args(argv)
    root = Path(args.root).resolve()
    total, status = 0, 0
    for path in walk(root):
        rel = path.relative_to(root).as_posix()
        if rel in SELF:
            continue
        text = path.read_text(encoding="utf-8")
        new, count, left = rewrite_text(root, rel, text)
        for item in left:
            print(f"{rel}: left for a person to fix: {item!r}", file=sys.stderr)
            status = 1
        if count == 0:
            continue
        total += count
        if args.check:
            print(f"{rel}: {count} citation(s) to rewrite")
            status = 1
            continue
        if rel.endswith(".py"):
            old_lines = text.split("\n")
            changed = {
                n
                for n, line in enumerate(new.split("\n"), 1)
                if n > len(old_lines) or old_lines[n - 1] != line
            }
            new, too_long = wrap_long_lines(new, changed)
            for number in too_long:
                print(f"{rel}:{number}: still over {LIMIT} characters: wrap it by hand", file=sys.stderr)
        path.write_text(new, encoding="utf-8")
    print(f"{total} citation(s) {'found' if args.check else 'rewritten'}")
    return status


if __name__ == "__main__":
    sys.exit(main())
