"""The client side of the ACP tests: the recording SDK client, the agent handle, the raw driver."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from tests.acp import wire


class RecordingClient:
    """The client side: collects updates, answers permissions and ``fs/*`` from scripts."""

    def __init__(self) -> None:
        """Start with no scripts."""
        self.permission_answers: list[Any] = []
        self.permission_requests: list[dict[str, Any]] = []
        self.permission_delay = 0.0
        self.buffers: dict[str, str] = {}
        self.fs_error: str | None = None
        self.writes: list[tuple[str, str]] = []

    async def request_permission(self, session_id: str, tool_call: Any, options: Any, **kwargs: Any) -> Any:
        from acp.schema import (
            AllowedOutcome,
            DeniedOutcome,
            RequestPermissionResponse,
        )

        self.permission_requests.append({"sessionId": session_id})
        if self.permission_delay:
            await asyncio.sleep(self.permission_delay)
        answer = self.permission_answers.pop(0) if self.permission_answers else "allow_once"
        if answer == "cancelled":
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=answer))

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        return None

    async def read_text_file(self, session_id: str, path: str, **kwargs: Any) -> Any:
        from acp.schema import ReadTextFileResponse

        if path in self.buffers:
            return ReadTextFileResponse(content=self.buffers[path])
        return ReadTextFileResponse(content=Path(path).read_text())

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> Any:
        from acp import RequestError
        from acp.schema import WriteTextFileResponse

        if self.fs_error:
            raise RequestError(-32002, self.fs_error)
        self.writes.append((path, content))
        self.buffers[path] = content
        return WriteTextFileResponse()

    async def create_terminal(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the agent must never call terminal/*")

    def on_connect(self, conn: Any) -> None:
        return None


class Agent:
    """A running ``hermes acp`` driven by the SDK client, with the recording."""

    def __init__(
        self,
        conn: Any,
        process: Any,
        client: RecordingClient,
        frames: list[tuple[str, dict[str, Any]]],
        stderr_path: Path,
    ) -> None:
        """Wrap a spawned agent.

        :param conn: the SDK ``ClientSideConnection``.
        :param process: the subprocess.
        :param client: the recording client.
        :param frames: the shared recording.
        :param stderr_path: where its stderr goes.
        """
        self.conn = conn
        self.process = process
        self.client = client
        self.frames = frames
        self.stderr_path = stderr_path

    async def request(self, method: str, params: Any = None) -> Any:
        """Send a raw request through the SDK connection (for calls the SDK cannot make).

        :param method: the method.
        :param params: the params.
        :returns: the result.
        :raises acp.RequestError: on an error response.
        """
        return await self.conn._conn.send_request(method, params)

    async def error(self, method: str, params: Any = None) -> dict[str, Any]:
        """Send a request that must fail; return the error object.

        :param method: the method.
        :param params: the params.
        :returns: ``{code, message, data?}``.
        """
        from acp import RequestError

        try:
            result = await self.request(method, params)
        except RequestError as exc:
            return {"code": exc.code, "message": str(exc), "data": exc.data}
        raise AssertionError(f"{method} succeeded with {result!r}")

    async def notify(self, method: str, params: Any = None) -> None:
        """Send a raw notification.

        :param method: the method.
        :param params: the params.
        """
        await self.conn._conn.send_notification(method, params)

    async def initialize(self, **caps: Any) -> dict[str, Any]:
        """Send ``initialize`` with the given client capabilities.

        :param caps: the ``clientCapabilities`` object.
        :returns: the result.
        """
        result: dict[str, Any] = await self.request(
            "initialize", {"protocolVersion": 1, "clientCapabilities": caps}
        )
        return result

    async def new(self, cwd: Path | str, **extra: Any) -> dict[str, Any]:
        """Create a session.

        :param cwd: the workspace.
        :param extra: more params.
        :returns: the result.
        """
        params = {"cwd": str(cwd), "mcpServers": [], **extra}
        result: dict[str, Any] = await self.request("session/new", params)
        return result

    async def prompt(self, session_id: str, text: str) -> dict[str, Any]:
        """Send a text prompt and wait for its response.

        :param session_id: the session.
        :param text: the prompt.
        :returns: the result.
        """
        result: dict[str, Any] = await self.request(
            "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
        )
        return result

    def updates(self, session_id: str | None = None) -> list[dict[str, Any]]:
        """Return the updates received so far.

        :param session_id: only this session's.
        :returns: update objects.
        """
        return wire.updates(self.frames, session_id)

    def received(self, method: str) -> list[dict[str, Any]]:
        """Return the agent-sent frames with this method.

        :param method: the method.
        :returns: the frames.
        """
        return [m for d, m in self.frames if d == "in" and m.get("method") == method]

    def text(self, session_id: str, kinds: tuple[str, ...] = ("agent_message_chunk",)) -> str:
        """Concatenate the text of this session's chunks.

        :param session_id: the session.
        :param kinds: the chunk kinds.
        :returns: the text.
        """
        return "".join(
            u["content"].get("text", "") for u in self.updates(session_id) if u.get("sessionUpdate") in kinds
        )

    async def settle(self, delay: float = 0.1) -> None:
        """Give in-flight notifications time to arrive.

        :param delay: seconds.
        """
        await asyncio.sleep(delay)

    def stderr(self) -> str:
        """Return what the agent wrote to stderr so far."""
        return self.stderr_path.read_text(errors="replace")


class RawAgent:
    """``hermes acp`` on plain pipes: bytes in, parsed lines out."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        """Wrap the process.

        :param process: the subprocess.
        """
        self.process = process
        self.lines: list[dict[str, Any]] = []
        self.raw: list[bytes] = []

    async def send(self, data: bytes | dict[str, Any]) -> None:
        """Write bytes (or one JSON object plus newline).

        :param data: the bytes or the object.
        """
        if isinstance(data, dict):
            data = json.dumps(data).encode() + b"\n"
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        await self.process.stdin.drain()

    async def read(self, timeout: float = 10.0) -> dict[str, Any]:
        """Read the next frame.

        :param timeout: seconds to wait.
        :returns: the parsed frame.
        """
        assert self.process.stdout is not None
        line = await asyncio.wait_for(self.process.stdout.readline(), timeout)
        assert line.endswith(b"\n"), f"not a full line: {line!r:.200}"
        self.raw.append(line)
        frame: dict[str, Any] = json.loads(line)
        self.lines.append(frame)
        return frame

    async def response(self, request_id: Any, timeout: float = 10.0) -> dict[str, Any]:
        """Read frames until the response with this id.

        :param request_id: the id.
        :param timeout: seconds to wait overall.
        :returns: the response.
        """
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        while True:
            frame = await self.read(max(0.01, end - loop.time()))
            if (
                "method" not in frame
                and frame.get("id") == request_id
                and type(frame.get("id")) is type(request_id)
            ):
                return frame

    async def request(self, request_id: Any, method: str, params: Any = None) -> dict[str, Any]:
        """Send a request and read its response.

        :param request_id: the id.
        :param method: the method.
        :param params: the params.
        :returns: the response frame.
        """
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        return await self.response(request_id)
