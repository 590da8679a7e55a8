"""Register the OpenTelemetry tracer (docs/observability.md).

Cheap to import: nothing of OpenTelemetry (nor pydantic) loads unless ``[otel]`` switches
tracing on and the ``otel`` extra is installed.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from hermes_core import ConfigError, ConfigSection, TracerSpec, hookimpl

if TYPE_CHECKING:
    from hermes_core import Kernel

log = logging.getLogger("hermes.otel")

#: ``[otel]`` field → environment variable (kept here so the CLI needs no import of settings).
ENV = {
    "enabled": "HERMES_OTEL",
    "sdk_disabled": "OTEL_SDK_DISABLED",
    "traces_exporter": "OTEL_TRACES_EXPORTER",
    "metrics_exporter": "OTEL_METRICS_EXPORTER",
    "endpoint": "OTEL_EXPORTER_OTLP_ENDPOINT",
    "traces_endpoint": "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "service_name": "OTEL_SERVICE_NAME",
    "capture_content": "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
}
#: The tracers this process built, by kernel (a process may run several kernels).
_active: dict[int, Any] = {}


def make_tracer(kernel: Kernel) -> Any:
    """Build the tracer when ``[otel]`` switches tracing on and the ``otel`` extra is installed."""
    raw = kernel.settings.section("otel")
    if not raw:
        return None  # the default is "auto" with no exporter: off, and nothing imported
    from pydantic import ValidationError

    from hermes_otel.settings import OtelSettings

    try:
        settings = OtelSettings.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(f"[otel]: {exc.errors()[0]['loc']}: {exc.errors()[0]['msg']}") from None
    how = settings.mode()
    if how is None:
        return None
    if importlib.util.find_spec("opentelemetry.sdk") is None:
        log.warning("tracing is switched on but OpenTelemetry is missing: pip install 'hermes-kernel[otel]'")
        return None
    from hermes_otel.tracer import OtelTracer

    tracer = OtelTracer.from_settings(settings) if how == "env" else OtelTracer.from_globals(settings)
    _active[id(kernel)] = tracer
    return tracer


@hookimpl
def hermes_tracers() -> TracerSpec:
    """Declare the ``otel`` tracer and the variables layered over ``[otel]``."""
    return TracerSpec(name="otel", factory=make_tracer, config_section="otel", env=ENV)


@hookimpl
def hermes_config_sections() -> ConfigSection:
    """``[otel]``, so ``hermes config`` knows its keys."""
    return ConfigSection(
        name="otel",
        summary="OpenTelemetry traces and metrics (docs/observability.md)",
        settings_model="hermes_otel.settings:OtelSettings",
    )


@hookimpl
def hermes_lifespan(kernel: Kernel) -> contextlib.AbstractAsyncContextManager[Any] | None:
    """Flush what is still buffered when the kernel stops."""
    if id(kernel) not in _active:
        return None
    return _flushing(kernel)


@contextlib.asynccontextmanager
async def _flushing(kernel: Kernel) -> AsyncIterator[None]:
    try:
        yield
    finally:
        tracer = _active.pop(id(kernel), None)
        if tracer is not None:
            await tracer.close()
