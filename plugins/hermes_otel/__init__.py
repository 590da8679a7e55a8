"""OpenTelemetry traces and metrics of the agent loop (docs/observability.md)."""
