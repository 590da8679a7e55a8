"""File access through the client's ``fs/*`` methods when it advertises them
(docs/reference/acp.md#client-file-system).

The core's file tools call ``session.file_access.read_text`` / ``write_text`` from tool threads;
:class:`ClientFileAccess` bridges those calls to the event loop and waits for the client.
Confinement and approval already happened in the core before any of this runs.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_core import ToolError
from hermes_core.rpc import PeerClosedError, RpcError

if TYPE_CHECKING:
    from hermes_acp.conn import AcpConnection
    from hermes_acp.state import AcpSession
    from hermes_core import FileAccess

log = logging.getLogger("hermes_acp")


class ClientFileAccess:
    """A ``FileAccess`` that reads and/or writes through the client."""

    def __init__(
        self,
        conn: AcpConnection,
        session_id: str,
        local: FileAccess,
        *,
        read: bool,
        write: bool,
        timeout_s: float,
    ) -> None:
        """Create the bridge.

        :param conn: the connection (its peer sends the requests).
        :param session_id: the session the requests name.
        :param local: the core's local file access, for the directions the client lacks.
        :param read: use ``fs/read_text_file``.
        :param write: use ``fs/write_text_file``.
        :param timeout_s: how long to wait for the client.
        """
        self._conn = conn
        self._session_id = session_id
        self._local = local
        self._read = read
        self._write = write
        self._timeout = timeout_s
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()

    def _on_loop(self) -> bool:
        # Previews and handlers run on tool threads and read through the client. Nothing should
        # read on the event loop itself (blocking there on the client would deadlock); should
        # anything do so, it gets the local file rather than a hang.
        return threading.get_ident() == self._loop_thread

    def _call(self, method: str, params: dict[str, Any]) -> Any:
        peer = self._conn.peer
        if peer is None:
            raise ToolError(f"{method} failed: no client connection")
        future = asyncio.run_coroutine_threadsafe(
            peer.request(method, params, timeout=self._timeout), self._loop
        )
        try:
            return future.result(self._timeout + 1)
        except RpcError as exc:
            raise ToolError(f"the client refused {method}: {exc.message}") from None
        except (TimeoutError, PeerClosedError) as exc:
            future.cancel()
            raise ToolError(f"{method} failed: {exc}") from None

    def read_text(self, path: Path) -> str:
        """Return the file's text, through the client when it reads files.

        :param path: the absolute path.
        :returns: the text (unsaved editor buffers included).
        :raises ToolError: the client failed or answered badly.
        """
        if not self._read or self._on_loop():
            return self._local.read_text(path)
        result = self._call("fs/read_text_file", {"sessionId": self._session_id, "path": str(path)})
        content = result.get("content") if isinstance(result, dict) else None
        if not isinstance(content, str):
            raise ToolError("fs/read_text_file returned no text content")
        return content

    def write_text(self, path: Path, text: str) -> None:
        """Write the file, through the client when it writes files.

        :param path: the absolute path.
        :param text: the whole new text.
        :raises ToolError: the client failed.
        """
        if not self._write or self._on_loop():
            self._local.write_text(path, text)
            return
        self._call("fs/write_text_file", {"sessionId": self._session_id, "path": str(path), "content": text})


def install_file_access(conn: AcpConnection, acp_session: AcpSession) -> None:
    """Swap the session's file access for the client's when it advertises ``fs``.

    :param conn: the connection.
    :param acp_session: the session.
    """
    caps = conn.caps
    core = acp_session.core
    if not (caps.read_text_file or caps.write_text_file):
        core.file_access = conn.kernel.default_file_access()
        return
    core.file_access = ClientFileAccess(
        conn,
        core.id,
        conn.kernel.default_file_access(),
        read=caps.read_text_file,
        write=caps.write_text_file,
        timeout_s=conn.settings.fs_timeout_s,
    )
