"""``hermes api``: the OpenAI-compatible HTTP + SSE transport (chat, Responses, runs, discovery)."""
