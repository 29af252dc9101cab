"""The start/stop part shared by the small fake servers: an HTTP server on 127.0.0.1 (a free port)
in a daemon thread, whose handler reaches the fake through ``self.server.fake``."""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


def send_json(handler: BaseHTTPRequestHandler, status: int, body: Any, compact: bool = False) -> None:
    """Answer with ``body`` as JSON (a ``str`` as it is); ``compact`` drops the spaces after separators."""
    text = body if isinstance(body, str) else json.dumps(body, separators=(",", ":") if compact else None)
    data = text.encode()
    # headers and body leave in two writes: without TCP_NODELAY the second waits for the client's
    # delayed ACK (about 40 ms a request on Linux), which would hide what the client itself costs
    handler.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    handler.send_response(status)
    handler.send_header("content-type", "application/json")
    handler.send_header("content-length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, fake: Any, handler: type[BaseHTTPRequestHandler]) -> None:
        self.fake = fake
        super().__init__(("127.0.0.1", 0), handler)


class LocalServer:
    """Use as a context manager; ``url`` is set once it listens."""

    handler: type[BaseHTTPRequestHandler]
    url = ""
    _httpd: _Server | None = None

    def __enter__(self) -> Self:
        self._httpd = _Server(self, self.handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        threading.Thread(target=self._httpd.serve_forever, args=(0.02,), daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
