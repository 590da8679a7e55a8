"""Provider record and replay at the chunk level (docs/reference/scenarios.md#record-and-replay).

With ``record_dir`` set (``hermes --record DIR …`` or ``HERMES_RECORD_DIR``), every model call of
a real provider is written to ``DIR/NNNN.jsonl`` as it streams: a header line (provider, model,
purpose, the request's messages), one line per chunk with its offset in milliseconds from the
start of the call, and an ``end`` line (``ok`` or the provider error). Secrets the kernel knows
(API keys, and anything its redactor holds) are replaced by ``[REDACTED]``; request headers are
never written. ``mock:replay:DIR`` streams the same chunks back, with the same boundaries and
pauses.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes_core.errors import ProviderError
from hermes_core.providers import (
    ChatRequest,
    Chunk,
    FinishChunk,
    ModelInfo,
    Provider,
    ReasoningChunk,
    TextChunk,
    ToolCallChunk,
    ToolCallRequest,
    UsageChunk,
)

FORMAT = "hermes-recording/1"


def chunk_record(chunk: Chunk) -> dict[str, Any]:
    """Return the JSON form of one chunk."""
    if isinstance(chunk, TextChunk):
        return {"type": "text", "text": chunk.text}
    if isinstance(chunk, ReasoningChunk):
        return {"type": "reasoning", "text": chunk.text}
    if isinstance(chunk, ToolCallChunk):
        call = chunk.call
        return {"type": "tool_call", "id": call.id, "name": call.name, "arguments": call.arguments}
    if isinstance(chunk, UsageChunk):
        return {"type": "usage", "input": chunk.input, "output": chunk.output, "reasoning": chunk.reasoning}
    if isinstance(chunk, FinishChunk):
        return {"type": "finish", "reason": chunk.reason}
    raise TypeError(f"not a chunk: {type(chunk).__name__}")


def chunk_from(record: dict[str, Any]) -> Chunk:
    """Rebuild a chunk from :func:`chunk_record`'s form."""
    kind = record["type"]
    if kind == "text":
        return TextChunk(record["text"])
    if kind == "reasoning":
        return ReasoningChunk(record["text"])
    if kind == "tool_call":
        return ToolCallChunk(
            ToolCallRequest(id=record["id"], name=record["name"], arguments=record["arguments"])
        )
    if kind == "usage":
        return UsageChunk(
            input=record["input"], output=record["output"], reasoning=record.get("reasoning", 0)
        )
    if kind == "finish":
        return FinishChunk(record["reason"])
    raise ValueError(f"unknown chunk type {kind!r}")


class _Numbering:
    """Hands out the file numbers of one recording directory, continuing after existing files."""

    def __init__(self, directory: Path) -> None:
        existing = [int(p.stem) for p in directory.glob("*.jsonl") if p.stem.isdigit()]
        self._next = itertools.count(max(existing, default=0) + 1)
        self._lock = threading.Lock()

    def take(self) -> int:
        with self._lock:
            return next(self._next)


class RecordingProvider:
    """Wraps a provider and writes every call it streams to a recording directory."""

    def __init__(self, inner: Provider, name: str, directory: Path, redact: Callable[[str], str]) -> None:
        self.inner = inner
        self.name = name
        self.directory = directory
        self._redact = redact
        directory.mkdir(parents=True, exist_ok=True)
        self._numbers = _Numbering(directory)

    def _line(self, record: dict[str, Any]) -> str:
        text = json.dumps(record, ensure_ascii=False, sort_keys=True)
        return self._redact(text) + "\n"

    async def stream(self, request: ChatRequest) -> AsyncIterator[Chunk]:
        path = self.directory / f"{self._numbers.take():04d}.jsonl"
        header = {
            "format": FORMAT,
            "provider": self.name,
            "model": request.model,
            "purpose": request.purpose,
            "system": request.system,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "tools": [t.name for t in request.tools],
        }
        started = time.monotonic()
        with path.open("w", encoding="utf-8") as out:
            out.write(self._line(header))
            out.flush()
            try:
                async for chunk in self.inner.stream(request):
                    record = {"t_ms": round((time.monotonic() - started) * 1000, 3), **chunk_record(chunk)}
                    out.write(self._line(record))
                    out.flush()
                    yield chunk
            except ProviderError as err:
                error = {"kind": err.kind, "message": err.message, "retryable": err.retryable}
                out.write(self._line({"end": "error", "error": error}))
                raise
            out.write(self._line({"end": "ok"}))

    async def list_models(self) -> list[ModelInfo]:
        return await self.inner.list_models()

    async def probe(self, timeout: float) -> list[ModelInfo]:
        return await self.inner.probe(timeout)

    async def aclose(self) -> None:
        await self.inner.aclose()


@dataclass(frozen=True, slots=True)
class RecordedCall:
    """One recorded model call: its header, its chunks with their offsets, how it ended."""

    path: Path
    header: dict[str, Any]
    chunks: tuple[tuple[float, Chunk], ...]
    error: dict[str, Any] | None


def read_recording(directory: str | Path) -> list[RecordedCall]:
    """Read every call of a recording directory, in the order they were made.

    :raises ValueError: a file is not a recording (the message names file and line).
    """
    root = Path(directory)
    if not root.is_dir():
        raise ValueError(f"{root}: not a recording directory")
    calls = []
    for path in sorted(root.glob("*.jsonl")):
        lines = path.read_text(encoding="utf-8").splitlines()
        try:
            header = json.loads(lines[0]) if lines else {}
        except ValueError:
            header = {}
        if header.get("format") != FORMAT:
            raise ValueError(f"{path}:1: not a {FORMAT} file")
        chunks: list[tuple[float, Chunk]] = []
        error = None
        for number, line in enumerate(lines[1:], 2):
            try:
                record = json.loads(line)
                if "end" in record:
                    error = record.get("error")
                    break
                chunks.append((float(record["t_ms"]), chunk_from(record)))
            except (ValueError, KeyError, TypeError) as exc:
                raise ValueError(f"{path}:{number}: {exc}") from None
        calls.append(RecordedCall(path, header, tuple(chunks), error))
    return calls
