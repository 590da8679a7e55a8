"""The ``openai`` provider plugin: OpenAI and every OpenAI-compatible chat endpoint."""
