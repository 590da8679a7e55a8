"""First-party core tools for Hermes: files, search, terminal, clarify and todo
(docs/reference/core.md#tools)."""
