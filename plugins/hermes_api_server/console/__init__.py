"""The run console: a small web app served by ``hermes api`` at ``/console`` (docs/console.md)."""
