"""OpenTelemetry providers with in-memory exporters, installed once per test process as the
global providers; a kernel opts in with ``[otel] enabled = "global"``."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest


@dataclass
class Telemetry:
    spans: Any  # InMemorySpanExporter
    metrics: Any  # InMemoryMetricReader

    def finished(self) -> list[Any]:
        return list(self.spans.get_finished_spans())

    def points(self, name: str) -> list[Any]:
        """Every data point of metric ``name`` collected so far."""
        data = self.metrics.get_metrics_data()
        found = []
        for resource in data.resource_metrics if data else ():
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name == name:
                        found.extend(metric.data.data_points)
        return found


_installed: Telemetry | None = None


def _install() -> Telemetry:
    global _installed
    if _installed is None:
        from opentelemetry import metrics, trace
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        reader = InMemoryMetricReader()
        metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
        _installed = Telemetry(exporter, reader)
    return _installed


@pytest.fixture
def otel() -> Iterator[Telemetry]:
    telemetry = _install()
    telemetry.spans.clear()  # metrics are cumulative: tests compare before and after
    yield telemetry
