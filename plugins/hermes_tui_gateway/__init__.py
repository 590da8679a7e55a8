"""The TUI gateway transport: `hermes tui`, JSON-RPC over stdio or WebSocket."""
