"""Register the notes plugin: the model adds notes with ``add_note``, the user reads them with ``/notes``.

Both keep to the session's workspace: the notes live in ``NOTES.md`` at its top. The plugin also
contributes a storage backend, ``notes-snapshot`` (see ``storage.py``), to show how a third-party
backend is declared and tested.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from hermes_core import (
    CommandContext,
    CommandResult,
    CommandSpec,
    CommandUsageError,
    Storage,
    StorageSpec,
    ToolContext,
    ToolError,
    ToolSpec,
    hookimpl,
    resolve_in_workspace,
)

NOTES_FILE = "NOTES.md"


def add_note(args: dict[str, Any], ctx: ToolContext) -> str:
    """Append one line to NOTES.md (a worker thread: blocking file access is fine)."""
    text = args.get("text")
    if not isinstance(text, str) or not text.strip():
        raise ToolError("'text' must be a non-empty string")
    path = ctx.resolve(NOTES_FILE)
    try:
        before = ctx.file_access.read_text(path)
    except ToolError:
        before = ""  # no notes yet
    ctx.file_access.write_text(path, f"{before}- {text.strip()}\n")
    return f"noted in {NOTES_FILE}"


async def notes_command(ctx: CommandContext) -> CommandResult:
    """Show NOTES.md, or say there is none."""
    if ctx.args:
        raise CommandUsageError("/notes", "/notes takes no arguments")
    if ctx.session is None:
        raise CommandUsageError("/notes", "/notes needs a session")
    path = resolve_in_workspace(NOTES_FILE, ctx.session.cwd)
    if not path.is_file():
        return CommandResult(kind="exec", output="no notes yet")
    text = await asyncio.to_thread(path.read_text, encoding="utf-8")
    return CommandResult(kind="exec", output=text.rstrip("\n"))


@hookimpl
def hermes_tools() -> ToolSpec:
    """Declare ``add_note``: it changes a file, so approval profiles treat it as an edit."""
    return ToolSpec(
        name="add_note",
        description=f"Add a one-line note to {NOTES_FILE} in the workspace.",
        schema={
            "type": "object",
            "properties": {"text": {"type": "string", "description": "The note."}},
            "required": ["text"],
        },
        handler=add_note,
        kind="edit",
        title="Add a note",
    )


@hookimpl
def hermes_slash_commands() -> CommandSpec:
    """Declare ``/notes``."""
    return CommandSpec(
        name="notes",
        summary=f"Show the notes in {NOTES_FILE}",
        handler=notes_command,
        usage="/notes",
        category="files",
    )


def make_storage(path: Path, *, read_only: bool = False) -> Storage:
    """Build the ``notes-snapshot`` backend on ``storage.path`` (imported only when chosen)."""
    from hermes_notes.storage import SnapshotStorage

    return SnapshotStorage(path)


@hookimpl
def hermes_storage_backends() -> StorageSpec:
    """Declare the ``notes-snapshot`` storage backend."""
    return StorageSpec(name="notes-snapshot", factory=make_storage)
