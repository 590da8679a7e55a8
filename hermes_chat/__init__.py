"""``hermes chat``: a terminal client of the TUI gateway (docs/chat.md).

The client speaks only the gateway's JSON-RPC protocol (docs/protocols/tui-gateway.md), to a
``hermes tui`` it spawns on stdio or to one it attaches to over WebSocket, exactly as any other
host would: it never imports the kernel (``tests/test_boundaries.py`` checks). Output goes to the
terminal's normal scrollback; prompt_toolkit reads the input and rich renders Markdown, both
imported only when the interactive client starts.
"""
