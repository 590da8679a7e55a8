"""First-party core tools for Hermes: files, search, terminal, clarify and todo (agent-core §13)."""
