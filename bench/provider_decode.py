"""CPU per token of a provider's stream decoding alone: the ``openai`` provider reading the fake
upstream's frames (``bench_api.py``) from an in-memory body, one frame per read with a loop pass
between reads, as a network stream arrives at a server that keeps up (issue #30's per-token path).

Prints the reads alone, then the provider's whole decode path (SSE parsing, JSON, chunk decoding
and its generator layers) and the difference. Not a test.

Run: ``.venv/bin/python bench/provider_decode.py [--tokens 50000]``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_api import _tail, _word

from hermes_openai.decode import ChatStreamDecoder
from hermes_openai.provider import OpenAIProvider


class _Body:
    """An aiohttp-like body that hands out one frame per read, after a loop pass."""

    def __init__(self, frames: list[bytes]) -> None:
        self.frames = frames
        self.at = 0

    def set_exception(self, exc: BaseException) -> None:  # the stall timer's way in; never fires here
        raise exc

    async def readany(self) -> bytes:
        if self.at == len(self.frames):
            return b""
        await asyncio.sleep(0)
        self.at += 1
        return self.frames[self.at - 1]


async def main(tokens: int) -> None:
    provider = OpenAIProvider({"base_url": "http://127.0.0.1:9/v1", "api_key": "k"}, name="fake")
    frames = [_word(i) for i in range(tokens)] + [_tail(tokens)]
    body = _Body(frames)
    started = time.process_time()
    while await body.readany():
        pass
    reads = (time.process_time() - started) / tokens * 1e6
    body = _Body(frames)
    started = time.process_time()
    chunks = 0
    async for _ in provider._decode_events(body, ChatStreamDecoder()):
        chunks += 1
    whole = (time.process_time() - started) / tokens * 1e6
    print(
        f"reads alone {reads:.2f} us/token; openai decode path {whole:.2f} us/token; "
        f"decoding {whole - reads:.2f}"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tokens", type=int, default=50_000)
    asyncio.run(main(parser.parse_args().tokens))
