"""``[otel]``: when the agent loop is traced (docs/observability.md#configuration).

Every field can come from its standard environment variable, layered over ``config.toml`` by the
CLI (``hermes_otel.plugin.ENV``); the exporters also read the rest of the ``OTEL_EXPORTER_OTLP_*`` variables
themselves (headers, timeouts, protocol details).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict


class OtelSettings(BaseModel):
    """The ``[otel]`` table.

    ``enabled``: ``auto`` traces when an exporter is configured (``traces_exporter`` other than
    ``none``, or an OTLP endpoint); ``on`` always (OTLP to its default endpoint unless told
    otherwise); ``off`` never; ``global`` uses the providers the embedding program installed
    (``opentelemetry.trace.set_tracer_provider``).
    """

    model_config = ConfigDict(extra="forbid")

    enabled: Literal["auto", "on", "off", "global"] = "auto"
    sdk_disabled: bool = False
    traces_exporter: str | None = None
    metrics_exporter: str | None = None
    endpoint: str | None = None
    traces_endpoint: str | None = None
    service_name: str | None = None
    capture_content: bool = False

    def mode(self) -> Literal["env", "global"] | None:
        """How to trace: build providers (``env``), use the global ones, or not at all (None)."""
        if self.sdk_disabled or self.enabled == "off":
            return None
        if self.enabled == "global":
            return "global"
        if self.enabled == "on":
            return "env"
        exporter = (self.traces_exporter or "").strip().lower()
        if exporter == "none":
            return None
        if exporter or self.endpoint or self.traces_endpoint:
            return "env"
        return None
