"""Typed clients for Hermes' TUI gateway and API server (docs/integrating.md).

The models and tables are generated from the schema export by ``tools/gen_clients.py``
(``tui_models``, ``api_models``, ``tui_methods``, ``api_operations``, ``stamp``); the
transports (``tui``, ``api``) are written by hand.
"""

from hermes_client.api import ApiClient, ApiError, SseEvent
from hermes_client.stamp import SCHEMA_SHA256, SCHEMA_VERSION
from hermes_client.tui import ConnectionClosed, Event, RpcError, TuiClient

__all__ = [
    "SCHEMA_SHA256",
    "SCHEMA_VERSION",
    "ApiClient",
    "ApiError",
    "ConnectionClosed",
    "Event",
    "RpcError",
    "SseEvent",
    "TuiClient",
]
