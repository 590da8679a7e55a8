"""A loopback TCP relay the test can cut, to drop a client's connection like a network would."""

from __future__ import annotations

import socket
import threading


class CuttableRelay:
    """Relays ``127.0.0.1:port`` to an upstream port; :meth:`cut` drops every open connection."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._server.getsockname()[1])
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()
        self.accepted = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            with self._lock:
                self._open += [client, upstream]
                self.accepted += 1
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        for sock in (source, sink):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self) -> None:
        """Drop every connection at once (no WebSocket close frame: a dead network)."""
        with self._lock:
            sockets, self._open = self._open, []
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()

    def close(self) -> None:
        """Stop accepting and drop everything."""
        self._server.close()
        self.cut()
