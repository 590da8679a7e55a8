"""The assistant message of one model call, streamed as pi ``message_update`` records
(docs/reference/pi.md#events).

Text and reasoning deltas become ``text_*`` and ``thinking_*`` block events; deltas already
queued together are sent as one ``*_delta`` (nothing waits for the next one). Tool calls are known
once the call ended; they are sent as ``toolcall_start``/``toolcall_delta``/``toolcall_end`` just
before ``message_end``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from hermes_pi.messages import assistant_message, usage_object

Send = Callable[[dict[str, Any]], None]
SendFrame = Callable[[bytes], None]

_ZERO_USAGE = json.dumps(usage_object(), separators=(",", ":")).encode()
_STRING = json.JSONEncoder(ensure_ascii=False)


def _update_frame(kind: str, index: int, delta: str) -> bytes:
    """Encode a ``message_update`` delta record by hand: the hot path of a stream."""
    return (
        b'{"type":"message_update","usage":'
        + _ZERO_USAGE
        + b',"assistantMessageEvent":{"type":"'
        + kind.encode()
        + b'","contentIndex":'
        + str(index).encode()
        + b',"delta":'
        + _STRING.encode(delta).encode("utf-8", "backslashreplace")
        + b"}}\n"
    )


class AssistantStream:
    """One assistant message from ``message_start`` to ``message_end``.

    :param ref: the ``provider:model`` that answers.
    :param ts: when the call started (epoch seconds).
    :param send: writes one record.
    :param send_frame: writes one encoded record.
    """

    def __init__(self, ref: str | None, ts: float, send: Send, send_frame: SendFrame) -> None:
        self.ref = ref
        self.ts = ts
        self._send = send
        self._send_frame = send_frame
        self.blocks: list[dict[str, Any]] = []  # finished and open text/thinking blocks
        self._open_kind: str | None = None  # "text" or "thinking"
        self._parts: list[str] = []
        self._pending_kind: str | None = None
        self._pending: list[str] = []
        self.usage: dict[str, Any] = usage_object()
        self.finished_call = False  # the model call ended (its usage arrived)
        partial = assistant_message(
            ref=ref, text="", reasoning="", calls=(), stop_reason="pending", usage=usage_object(), ts=ts
        )
        send({"type": "message_start", "message": partial})

    # -- deltas -------------------------------------------------------------------------------
    def delta(self, kind: str, text: str) -> None:
        """Take one text (``text``) or reasoning (``thinking``) delta; it is sent at :meth:`flush`."""
        if self._pending_kind is not None and self._pending_kind != kind:
            self.flush()
        self._pending_kind = kind
        self._pending.append(text)

    def flush(self) -> None:
        """Send the deltas taken since the last flush as one ``*_delta`` record."""
        kind = self._pending_kind
        if kind is None:
            return
        text = "".join(self._pending)
        self._pending_kind = None
        self._pending = []
        if self._open_kind != kind:
            self._end_block()
            self._open_kind = kind
            self._parts = []
            index = len(self.blocks)
            self.blocks.append({"type": kind, kind: ""})
            self._event({"type": f"{kind}_start", "contentIndex": index})
        self._parts.append(text)
        self._send_frame(_update_frame(f"{kind}_delta", len(self.blocks) - 1, text))

    def _end_block(self) -> None:
        kind = self._open_kind
        if kind is None:
            return
        index = len(self.blocks) - 1
        content = "".join(self._parts)
        self.blocks[index] = {"type": kind, kind: content}
        self._open_kind = None
        self._parts = []
        self._event({"type": f"{kind}_end", "contentIndex": index, "content": content})

    def _event(self, event: dict[str, Any]) -> None:
        self._send({"type": "message_update", "usage": self.usage, "assistantMessageEvent": event})

    # -- the end ------------------------------------------------------------------------------
    def finish(
        self,
        *,
        stop_reason: str,
        calls: Sequence[dict[str, Any]] = (),
        error: str | None = None,
    ) -> dict[str, Any]:
        """End the open block, send the tool calls and ``message_end``; return the message."""
        self.flush()
        self._end_block()
        for call in calls:
            index = len(self.blocks)
            self.blocks.append(call)
            self._event(
                {"type": "toolcall_start", "contentIndex": index, "id": call["id"], "toolName": call["name"]}
            )
            self._event(
                {
                    "type": "toolcall_delta",
                    "contentIndex": index,
                    "delta": json.dumps(call["arguments"], ensure_ascii=False),
                }
            )
            self._event({"type": "toolcall_end", "contentIndex": index, "toolCall": call})
        message = assistant_message(
            ref=self.ref,
            text="",
            reasoning="",
            calls=(),
            stop_reason=stop_reason,
            usage=self.usage,
            ts=self.ts,
            error=error,
        )
        message["content"] = [dict(b) for b in self.blocks]
        self._send({"type": "message_end", "message": message})
        return message
