"""Declare the first-party core tools (docs/reference/core.md#tools) through the ``hermes_tools`` hook.

This module is cheap to import: it builds the ``ToolSpec`` records only, and each handler or
preview imports its implementation module on first call.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from hermes_core import ToolSpec, hookimpl

if TYPE_CHECKING:
    # Annotations only: importing the event records at start-up costs tens of milliseconds.
    from hermes_core import FileChange, ToolContext, ToolResult

TITLE_CHARS = 80
DESCRIBE_CHARS = 200


def _lazy_handler(module: str, name: str) -> Callable[[dict[str, Any], ToolContext], ToolResult | str]:
    """Return a plain (thread-run) handler that imports ``hermes_tools.<module>`` on first call."""

    def handler(args: dict[str, Any], ctx: ToolContext) -> ToolResult | str:
        implementation = getattr(importlib.import_module(f"hermes_tools.{module}"), name)
        result: ToolResult | str = implementation(args, ctx)
        return result

    handler.__name__ = handler.__qualname__ = name
    handler.__doc__ = f"Run hermes_tools.{module}.{name}."
    return handler


def _lazy_preview(module: str, name: str) -> Callable[[Mapping[str, Any], ToolContext], FileChange | None]:
    """Return a preview function that imports ``hermes_tools.<module>`` on first call."""

    def preview(args: Mapping[str, Any], ctx: ToolContext) -> FileChange | None:
        implementation = getattr(importlib.import_module(f"hermes_tools.{module}"), name)
        change: FileChange | None = implementation(args, ctx)
        return change

    preview.__name__ = preview.__qualname__ = name
    return preview


def _one_line(text: object, limit: int) -> str:
    """Collapse whitespace and cut ``text`` to ``limit`` characters with an ellipsis."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _arg(args: Mapping[str, Any], name: str, default: str = "") -> str:
    value = args.get(name)
    return default if value is None else str(value)


def _both(make: Callable[[Mapping[str, Any]], str]) -> tuple[Callable[..., str], Callable[..., str]]:
    """Return a (title, describe) pair from one phrasing, cut to each one's length."""

    def title(args: Mapping[str, Any]) -> str:
        return _one_line(make(args), TITLE_CHARS)

    def describe(args: Mapping[str, Any]) -> str:
        return _one_line(make(args), DESCRIBE_CHARS)

    return title, describe


def _read_phrase(args: Mapping[str, Any]) -> str:
    text = f"Read {_arg(args, 'path', '?')}"
    offset, limit = args.get("offset"), args.get("limit")
    if isinstance(offset, int) and isinstance(limit, int):
        return f"{text} (lines {offset}-{offset + limit - 1})"
    if isinstance(offset, int):
        return f"{text} (from line {offset})"
    if isinstance(limit, int):
        return f"{text} (first {limit} lines)"
    return text


def _write_phrase(args: Mapping[str, Any]) -> str:
    content = args.get("content")
    size = f" ({len(content.splitlines())} lines)" if isinstance(content, str) else ""
    return f"Write {_arg(args, 'path', '?')}{size}"


def _edit_phrase(args: Mapping[str, Any]) -> str:
    every = " (every occurrence)" if args.get("replace_all") is True else ""
    return f"Edit {_arg(args, 'path', '?')}{every}"


def _search_phrase(args: Mapping[str, Any]) -> str:
    glob = args.get("glob")
    where = _arg(args, "path", ".") + (f" ({glob})" if glob else "")
    return f"Search /{_arg(args, 'pattern')}/ in {where}"


def _terminal_phrase(args: Mapping[str, Any]) -> str:
    prefix = "Run in background" if args.get("background") is True else "Run"
    return f"{prefix}: {_arg(args, 'command')}"


def _todo_phrase(args: Mapping[str, Any]) -> str:
    todos = args.get("todos")
    count = f" ({len(todos)} items)" if isinstance(todos, list) else ""
    return f"Update the todo list{count}"


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def _path(description: str = "File path, relative to the workspace or absolute.") -> dict[str, Any]:
    return {"type": "string", "description": description}


def _file_specs() -> list[ToolSpec]:
    read_title, read_describe = _both(_read_phrase)
    write_title, write_describe = _both(_write_phrase)
    edit_title, edit_describe = _both(_edit_phrase)
    list_title, list_describe = _both(lambda args: f"List {_arg(args, 'path', '.')}")
    search_title, search_describe = _both(_search_phrase)
    return [
        ToolSpec(
            name="read_file",
            description=(
                "Read a UTF-8 text file. Lines come back numbered (number, tab, text); the numbers "
                "are not part of the file. Long files are read in pages: pass offset (1-based first "
                "line) and limit (line count, default 2000). Binary files are refused."
            ),
            schema=_schema(
                {
                    "path": _path(),
                    "offset": {
                        "type": "integer",
                        "minimum": 1,
                        "description": "First line to read (1-based).",
                    },
                    "limit": {"type": "integer", "minimum": 1, "description": "How many lines to read."},
                },
                ["path"],
            ),
            handler=_lazy_handler("files", "read_file"),
            kind="read",
            title=read_title,
            describe=read_describe,
            emoji="📖",
            path_args=("path",),
        ),
        ToolSpec(
            name="write_file",
            description=(
                "Create a file or replace its whole content. Parent directories are created. Prefer "
                "edit_file for changing part of an existing file."
            ),
            schema=_schema(
                {"path": _path(), "content": {"type": "string", "description": "The complete new content."}},
                ["path", "content"],
            ),
            handler=_lazy_handler("files", "write_file"),
            kind="edit",
            title=write_title,
            describe=write_describe,
            emoji="📝",
            preview=_lazy_preview("files", "preview_write"),
            path_args=("path",),
        ),
        ToolSpec(
            name="edit_file",
            description=(
                "Replace an exact string in a file. old_string must match the file's text exactly "
                "(whitespace included, without read_file's line numbers) and must occur exactly once, "
                "unless replace_all is true. Include surrounding lines to make it unique."
            ),
            schema=_schema(
                {
                    "path": _path(),
                    "old_string": {"type": "string", "description": "The exact text to replace."},
                    "new_string": {"type": "string", "description": "The replacement text."},
                    "replace_all": {
                        "type": "boolean",
                        "description": "Replace every occurrence instead of requiring one.",
                    },
                },
                ["path", "old_string", "new_string"],
            ),
            handler=_lazy_handler("files", "edit_file"),
            kind="edit",
            title=edit_title,
            describe=edit_describe,
            emoji="✏️",
            preview=_lazy_preview("files", "preview_edit"),
            path_args=("path",),
        ),
        ToolSpec(
            name="list_dir",
            description=(
                "List a directory's entries, one per line; directories end with '/'. Sensitive entries "
                "(.git, .ssh, .env files, private keys) are left out unless you list one of them."
            ),
            schema=_schema({"path": _path("Directory to list (default: the workspace).")}, []),
            handler=_lazy_handler("listing", "list_dir"),
            kind="read",
            title=list_title,
            describe=list_describe,
            emoji="📂",
            path_args=("path",),
        ),
        ToolSpec(
            name="search",
            description=(
                "Search text files for lines matching a Python regular expression. Returns "
                "'path:line: text' for each match (at most 200). path is a file or a directory searched "
                "recursively (default: the workspace); glob filters file names, e.g. '*.py' or "
                "'src/**/*.ts'. Binary files and sensitive paths are skipped."
            ),
            schema=_schema(
                {
                    "pattern": {"type": "string", "description": "Regular expression (Python syntax)."},
                    "path": _path("File or directory to search (default: the workspace)."),
                    "glob": {"type": "string", "description": "Only search files matching this glob."},
                },
                ["pattern"],
            ),
            handler=_lazy_handler("listing", "search"),
            kind="search",
            title=search_title,
            describe=search_describe,
            emoji="🔎",
            path_args=("path",),
        ),
    ]


def _other_specs() -> list[ToolSpec]:
    run_title, run_describe = _both(_terminal_phrase)
    ask_title, ask_describe = _both(lambda args: f"Ask: {_arg(args, 'question')}")
    todo_title, todo_describe = _both(_todo_phrase)
    return [
        ToolSpec(
            name="terminal",
            description=(
                "Run a shell command with /bin/sh in the workspace and return its combined stdout and "
                "stderr and its exit code. There is no stdin and no terminal, so interactive programs "
                "will not work. timeout_s limits the run (default from settings). background=true "
                "starts a long-running process (a server, a watcher) and returns its pid and log file "
                "at once. Commands starting with sudo may ask the user for a password."
            ),
            schema=_schema(
                {
                    "command": {"type": "string", "description": "The shell command line."},
                    "timeout_s": {
                        "type": "number",
                        "exclusiveMinimum": 0,
                        "description": "Time limit in seconds.",
                    },
                    "background": {"type": "boolean", "description": "Start it and return immediately."},
                },
                ["command"],
            ),
            handler=_lazy_handler("terminal", "terminal"),
            kind="execute",
            title=run_title,
            toolset="terminal",
            describe=run_describe,
            emoji="💻",
            command_arg="command",
        ),
        ToolSpec(
            name="clarify",
            description=(
                "Ask the user a question when you cannot proceed without their input. Offer choices "
                "when the answer is one of a few options. Do not use it for things you can find out "
                "yourself."
            ),
            schema=_schema(
                {
                    "question": {"type": "string", "description": "The question to ask."},
                    "choices": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "Suggested answers, if any.",
                    },
                },
                ["question"],
            ),
            handler=_lazy_handler("agent", "clarify"),
            kind="think",
            title=ask_title,
            toolset="agent",
            describe=ask_describe,
            emoji="❓",
            needs=frozenset({"clarify"}),
        ),
        ToolSpec(
            name="todo",
            description=(
                "Keep a todo list for multi-step work. Send the full list every time (it replaces the "
                "previous one); keep exactly one item in_progress while working."
            ),
            schema=_schema(
                {
                    "todos": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "id": {"type": "string"},
                                "content": {"type": "string"},
                                "status": {
                                    "type": "string",
                                    "enum": ["pending", "in_progress", "completed", "cancelled"],
                                },
                                "priority": {"type": "string", "enum": ["high", "medium", "low"]},
                            },
                            "required": ["id", "content", "status"],
                            "additionalProperties": False,
                        },
                    }
                },
                ["todos"],
            ),
            handler=_lazy_handler("agent", "todo"),
            kind="think",
            title=todo_title,
            toolset="agent",
            describe=todo_describe,
            emoji="📋",
        ),
    ]


@hookimpl
def hermes_tools() -> list[ToolSpec]:
    """Declare the core tools: files, search, terminal, clarify and todo.

    :returns: one ``ToolSpec`` per tool.
    """
    return [*_file_specs(), *_other_specs()]
