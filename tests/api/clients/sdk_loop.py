"""The canonical openai-python streaming loop, run in the SDK's own venv by test_api_stream_clients.py.

argv: base URL (…/v1), API key, prompt. Prints one JSON line: the text read, the SDK version and
the error the SDK raised (type and message), if any.
"""

import json
import sys

import openai

base_url, key, prompt = sys.argv[1:4]
client = openai.OpenAI(base_url=base_url, api_key=key, max_retries=0)
text = ""
error = None
try:
    for chunk in client.chat.completions.create(
        model="hermes-agent", stream=True, messages=[{"role": "user", "content": prompt}]
    ):
        text += chunk.choices[0].delta.content or ""
except openai.APIError as exc:
    error = {"type": type(exc).__name__, "message": exc.message}
print(json.dumps({"version": openai.__version__, "text": text, "error": error}))
