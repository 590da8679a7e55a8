"""The input side's helpers: per-project history, collapsed pastes, image paths, completion.

History is one file per project under ``<data dir>/chat/history/`` (the project is the git
work tree the chat starts in, else the folder). Only what is sent as a prompt or command goes
there: answers to questions never do, and passwords and secrets are typed into a separate
buffer that has no history at all.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable
from pathlib import Path

from prompt_toolkit.completion import CompleteEvent, Completer, Completion, PathCompleter
from prompt_toolkit.document import Document

PASTE_LINES = 12  # a paste with more lines (or characters, below) is shown as one placeholder
PASTE_CHARS = 1200
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp")
_PLACEHOLDER = re.compile(r"\[pasted #(\d+): [^\]\n]*\]")


def project_root(cwd: Path) -> Path:
    """Return the git work tree containing ``cwd``, else ``cwd`` itself."""
    for folder in (cwd, *cwd.parents):
        if (folder / ".git").exists():
            return folder
    return cwd


def history_path(data_dir: Path, cwd: Path) -> Path:
    """Return the history file of the project ``cwd`` belongs to."""
    root = project_root(cwd)
    digest = hashlib.sha256(str(root).encode("utf-8", "surrogateescape")).hexdigest()[:16]
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", root.name or "root")[:40]
    return data_dir / "chat" / "history" / f"{name}-{digest}.txt"


class Pastes:
    """Large pastes, kept aside and shown in the input as ``[pasted #N: L lines]``."""

    def __init__(self) -> None:
        self._kept: dict[int, str] = {}

    def take(self, text: str) -> str:
        """Return what to insert for pasted ``text`` (itself, or a placeholder for a big one)."""
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        lines = text.count("\n") + 1
        if lines <= PASTE_LINES and len(text) <= PASTE_CHARS:
            return text
        number = len(self._kept) + 1
        self._kept[number] = text
        return f"[pasted #{number}: {lines} lines, {len(text)} chars]"

    def expand(self, text: str) -> str:
        """Put the kept pastes back in place of their placeholders."""
        return _PLACEHOLDER.sub(lambda m: self._kept.get(int(m.group(1)), m.group(0)), text)


def image_path(text: str, cwd: Path) -> Path | None:
    """Return the image file a paste names (a dragged-in file arrives as its path), or None."""
    candidate = text.strip()
    if not candidate or "\n" in candidate or len(candidate) > 4096:
        return None
    if len(candidate) > 1 and candidate[0] == candidate[-1] and candidate[0] in "'\"":
        candidate = candidate[1:-1]
    candidate = candidate.replace("\\ ", " ")
    if candidate.startswith("file://"):
        candidate = candidate[len("file://") :]
    if not candidate.lower().endswith(IMAGE_SUFFIXES):
        return None
    path = Path(candidate).expanduser()
    path = path if path.is_absolute() else cwd / path
    return path if path.is_file() else None


def _looks_like_path(word: str) -> bool:
    return word.startswith(("/", "./", "../", "~")) or ("/" in word and not word.startswith("http"))


class ChatCompleter(Completer):
    """``/`` commands, their arguments (models for ``/model``), and file paths."""

    def __init__(
        self,
        commands: Callable[[], Iterable[tuple[str, str]]],
        arguments: Callable[[str], Iterable[str]],
        cwd: Path | None = None,
    ) -> None:
        self._commands = commands
        self._arguments = arguments
        # Relative paths are completed from the chat's folder, not the process's.
        folder = str(cwd) if cwd is not None else None
        self._paths = PathCompleter(expanduser=True, get_paths=(lambda: [folder]) if folder else None)

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterable[Completion]:
        text = document.text_before_cursor
        if text.startswith("/") and "\n" not in text:
            name, space, arg = text.partition(" ")
            if not space:
                for command, meta in self._commands():
                    if command.startswith(name):
                        yield Completion(command, start_position=-len(name), display_meta=meta)
                return
            if name == "/image":
                yield from self._path_completions(arg, complete_event)
                return
            if " " in arg.strip():
                return
            word = arg.lstrip()
            for value in self._arguments(name):
                if value.startswith(word) and value != word:
                    yield Completion(value, start_position=-len(word))
            return
        word = document.get_word_before_cursor(WORD=True)
        if _looks_like_path(word):
            yield from self._path_completions(word, complete_event)

    def _path_completions(self, word: str, event: CompleteEvent) -> Iterable[Completion]:
        yield from self._paths.get_completions(Document(word, len(word)), event)
