"""The ``anthropic`` provider plugin: Claude models over the Anthropic Messages API."""
