"""One client connection of the gateway: where a bound session's frames and global events go."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from hermes_core import rpc

if TYPE_CHECKING:
    from hermes_core import Principal
    from hermes_tui_gateway.gateway import Gateway

SLOW_CONSUMER_BYTES = 64 * 1024 * 1024


class Conn:
    """One client connection (stdio for the process, or one WebSocket).

    :param kind: ``"stdio"`` or ``"ws"``.
    """

    def __init__(self, gateway: Gateway, kind: str) -> None:
        self.gateway = gateway
        self.kind = kind
        self.id = uuid.uuid4().hex[:8]
        self.peer: rpc.RpcPeer | None = None
        self.alive = True
        self.on_slow: Callable[[], None] | None = None
        #: The key a WebSocket connection authenticated with; its requests are scope-checked.
        self.principal: Principal | None = None

    def send_bytes(self, data: bytes) -> None:
        """Write one encoded frame, unless the connection is gone."""
        peer = self.peer
        if peer is None or not self.alive:
            return
        peer.send_bytes(data)
        if self.on_slow is not None and peer.pending_bytes > SLOW_CONSUMER_BYTES:
            self.on_slow()

    def notify_event(self, type_: str, payload: Mapping[str, Any] | None = None) -> None:
        """Send a global event (``session_id:""``, no ``seq``)."""
        params: dict[str, Any] = {"type": type_, "session_id": ""}
        if payload is not None:
            params["payload"] = payload
        self.send_bytes(rpc.encode_frame({"jsonrpc": "2.0", "method": "event", "params": params}))
