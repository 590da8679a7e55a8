"""The local :class:`~hermes_core.FileAccess`: read and write files on this machine's disk.

Transports may swap in another implementation (ACP's ``fs/*``); the file tools only ever talk to
``ctx.file_access``. Text is UTF-8 and line endings are kept exactly as they are on disk.
"""

from __future__ import annotations

from pathlib import Path

from hermes_core import ToolError

DEFAULT_MAX_BYTES = 32 * 1024 * 1024


def decode_text(data: bytes, path: Path) -> str:
    """Decode file bytes as UTF-8, refusing binary content.

    :param data: the file's bytes.
    :param path: the file, named in the error.
    :returns: the text.
    """
    if b"\0" in data:
        raise ToolError(f"binary file: {path}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolError(f"binary file (not valid UTF-8): {path}") from None


class LocalFileAccess:
    """Read and write local files as UTF-8 text."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        """Create the accessor.

        :param max_bytes: the largest file :meth:`read_text` accepts.
        """
        self.max_bytes = max_bytes

    def read_text(self, path: Path) -> str:
        """Return the file's text; raise ``ToolError`` for a missing, binary or huge file.

        :param path: an absolute path.
        :returns: the decoded text, line endings untouched.
        """
        try:
            with path.open("rb") as handle:
                data = handle.read(self.max_bytes + 1)
        except FileNotFoundError:
            raise ToolError(f"file not found: {path}") from None
        except IsADirectoryError:
            raise ToolError(f"{path} is a directory, not a file") from None
        except PermissionError:
            raise ToolError(f"permission denied: {path}") from None
        except OSError as exc:
            raise ToolError(f"cannot read {path}: {exc.strerror or exc}") from None
        if len(data) > self.max_bytes:
            raise ToolError(f"file too large (over {self.max_bytes:,} bytes): {path}")
        return decode_text(data, path)

    def write_text(self, path: Path, text: str) -> None:
        """Write ``text`` to the file as UTF-8, creating parent directories.

        :param path: an absolute path.
        :param text: the full new content.
        """
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # newline="" writes the text exactly; the tools keep the file's own line endings.
            with path.open("w", encoding="utf-8", newline="") as handle:
                handle.write(text)
        except IsADirectoryError:
            raise ToolError(f"{path} is a directory, not a file") from None
        except PermissionError:
            raise ToolError(f"permission denied: {path}") from None
        except OSError as exc:
            raise ToolError(f"cannot write {path}: {exc.strerror or exc}") from None
