"""An API server client: JSON operations and server-sent event streams over HTTP (``hermes api``).

Hand-written transport around the generated models: :data:`hermes_client.api_operations.OPERATIONS`
names each operation's route, body model, response models and stream events, so
``await client.create_run(RunCreateRequest(...))`` (or ``client.call("createRun", ...)``)
returns a :class:`RunAccepted` and
``client.stream("streamRunEvents", run_id=...)`` yields :class:`SseEvent` s whose ``data`` is
the event's model.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from hermes_client.api_operations import OPERATIONS, ApiTypedCalls, Operation


class ApiError(Exception):
    """A response outside the operation's 2xx answers: the status and the error body."""

    def __init__(self, status: int, body: Any) -> None:
        self.status = status
        self.body = body
        error = body.get("error") if isinstance(body, dict) else None
        self.code = error.get("code") if isinstance(error, dict) else None
        super().__init__(f"HTTP {status}: {body}")


@dataclass(frozen=True)
class SseEvent:
    """One server-sent event: its name, ``id``, and ``data`` as the operation's event model
    (a plain value when the export does not describe that event)."""

    name: str
    id: str | None
    data: BaseModel | Any
    raw: Any = field(repr=False)


def event_name(operation: Operation, sse_name: str | None, data: Any) -> str:
    """Return which of the operation's events a frame is: its ``event:`` line, else the data's
    ``type``, ``event`` or ``object`` field that names one."""
    if sse_name:
        return sse_name
    if isinstance(data, dict):
        for key in ("type", "event", "object"):
            value = data.get(key)
            if isinstance(value, str) and value in operation.events:
                return value
    return "message"


class ApiClient(ApiTypedCalls):
    """A client of one ``hermes api`` server.

    :param base_url: ``http://host:port``.
    :param api_key: the bearer key (``None``: no ``Authorization`` header).
    """

    def __init__(self, base_url: str, api_key: str | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self._http: Any = None

    async def _session(self) -> Any:
        import aiohttp

        if self._http is None:
            self._http = aiohttp.ClientSession()
        return self._http

    def _request_args(
        self, operation_id: str, body: BaseModel | dict[str, Any] | None, path: dict[str, str], headers: Any
    ) -> tuple[Operation, str, dict[str, Any]]:
        operation = OPERATIONS[operation_id]
        url = self.base_url + operation.path.format(**path)
        sent_headers = dict(headers or {})
        if self.api_key is not None:
            sent_headers["Authorization"] = f"Bearer {self.api_key}"
        kwargs: dict[str, Any] = {"headers": sent_headers}
        if body is not None:
            kwargs["json"] = (
                body.model_dump(mode="json", by_alias=True, exclude_unset=True)
                if isinstance(body, BaseModel)
                else body
            )
        return operation, url, kwargs

    async def call(
        self,
        operation_id: str,
        body: BaseModel | dict[str, Any] | None = None,
        *,
        headers: dict[str, str] | None = None,
        **path: str,
    ) -> BaseModel:
        """Run one JSON operation; return its response as the operation's model for that status.

        :raises ApiError: any other status.
        """
        operation, url, kwargs = self._request_args(operation_id, body, path, headers)
        http = await self._session()
        async with http.request(operation.verb, url, **kwargs) as response:
            text = await response.text()
            try:
                payload = json.loads(text) if text else None
            except ValueError:
                payload = text
            model = operation.responses.get(response.status)
            if model is None:
                raise ApiError(response.status, payload)
            return model.model_validate(payload)

    async def stream(
        self,
        operation_id: str,
        body: BaseModel | dict[str, Any] | None = None,
        *,
        headers: dict[str, str] | None = None,
        **path: str,
    ) -> AsyncIterator[SseEvent]:
        """Run a streaming operation; yield its events until the stream ends (or ``[DONE]``).

        :raises ApiError: the server answered with an error instead of a stream.
        """
        operation, url, kwargs = self._request_args(operation_id, body, path, headers)
        kwargs["headers"].setdefault("Accept", "text/event-stream")
        http = await self._session()
        async with http.request(operation.verb, url, **kwargs) as response:
            if response.status >= 300 or not response.content_type.startswith("text/event-stream"):
                text = await response.text()
                try:
                    raise ApiError(response.status, json.loads(text))
                except ValueError:
                    raise ApiError(response.status, text) from None
            name: str | None = None
            event_id: str | None = None
            data: list[str] = []
            async for raw_line in response.content:
                line = raw_line.decode("utf-8").rstrip("\r\n")
                if line == "":
                    if data:
                        text = "\n".join(data)
                        if text == "[DONE]":
                            return
                        yield self._event(operation, name, event_id, text)
                    name, data = None, []
                    continue
                if line.startswith(":"):
                    continue  # a comment (keepalive)
                key, _, value = line.partition(":")
                value = value[1:] if value.startswith(" ") else value
                if key == "event":
                    name = value
                elif key == "id":
                    event_id = value
                elif key == "data":
                    data.append(value)

    @staticmethod
    def _event(operation: Operation, name: str | None, event_id: str | None, text: str) -> SseEvent:
        try:
            raw = json.loads(text)
        except ValueError:
            return SseEvent(name or "message", event_id, text, text)
        kind = event_name(operation, name, raw)
        model = operation.events.get(kind)
        return SseEvent(kind, event_id, model.model_validate(raw) if model is not None else raw, raw)

    async def close(self) -> None:
        """Close the HTTP session."""
        if self._http is not None:
            await self._http.close()
            self._http = None

    async def __aenter__(self) -> ApiClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
