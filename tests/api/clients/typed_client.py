"""The typed client written for this API (``hermes-agent-api-client``), run in its own venv by
test_api_stream_clients.py.

argv: server root URL, API key, prompt. Prints one JSON line: the capability check, every event
the client yielded (class name and fields), and the error it raised, if any.
"""

import asyncio
import json
import sys
from importlib.metadata import version

from hermes_agent_api_client import HermesAgentApiClient


def plain(event: object) -> dict[str, object]:
    fields = {k: getattr(event, k) for k in getattr(type(event), "model_fields", {})}
    if not fields and hasattr(event, "__dataclass_fields__"):
        fields = {k: getattr(event, k) for k in event.__dataclass_fields__}
    return {"kind": type(event).__name__, **{k: getattr(v, "value", v) for k, v in fields.items()}}


async def main() -> None:
    root, key, prompt = sys.argv[1:4]
    events: list[dict[str, object]] = []
    error = None
    async with HermesAgentApiClient(root, key) as client:
        streaming = (await client.probe_capabilities()).chat_completions_streaming
        request = {"model": "hermes-agent", "stream": True, "messages": [{"role": "user", "content": prompt}]}
        try:
            async for event in client.stream_chat_events(request):
                events.append(plain(event))
        except Exception as exc:  # the test reports whatever the client raised
            error = {"type": type(exc).__name__, "message": str(exc)}
    out = {"version": version("hermes-agent-api-client"), "streaming": streaming, "events": events}
    print(json.dumps({**out, "error": error}))


asyncio.run(main())
