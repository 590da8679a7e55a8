"""Run bus on Redis Streams for ``hermes api`` (``bus.backend = "redis"``)."""
