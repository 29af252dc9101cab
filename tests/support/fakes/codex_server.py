"""A fake ChatGPT Codex backend speaking the Responses WebSocket protocol on 127.0.0.1.

It runs ``websockets``' threaded server, so the client under test meets real RFC 6455 frames, real
handshakes and real close codes. Every accepted handshake is logged (path and headers) and every
text frame received (its JSON). Each ``response.create`` frame takes the next scripted response:

* ``{"content": [...], "usage": {...}}`` - the Responses events ``wire_openai_responses`` renders,
  one JSON text frame each (``"id"`` names the response);
* ``{"events": [...]}`` - these events verbatim;
* ``{"close": code, "after": n}`` - send ``n`` rendered events, then close with ``code``.

``reject`` (an HTTP status) refuses every handshake; ``stall`` accepts TCP but never answers it.
"""

from __future__ import annotations

import base64
import json
import socket
import threading
import time
from typing import Any

from websockets.datastructures import Headers
from websockets.http11 import Request, Response
from websockets.sync.server import Server, ServerConnection, serve

from . import wire_openai_responses


def codex_token(account: str) -> str:
    """A ChatGPT access token shape (a JWT carrying the account id claim; the signature is not checked)."""
    def part(data: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")
    return f"{part({'alg': 'RS256'})}.{part({'https://api.openai.com/auth': {'chatgpt_account_id': account}})}.c2ln"


def rendered(response: dict[str, Any], body: dict[str, Any]) -> list[dict[str, Any]]:
    events = []
    for chunk in wire_openai_responses.render_events(response, {"body": body}):
        data = next(line for line in chunk.decode().splitlines() if line.startswith("data: "))
        event = json.loads(data[len("data: "):])
        if response.get("id") and isinstance(event.get("response"), dict):
            event["response"]["id"] = response["id"]
        events.append(event)
    return events


class FakeCodexServer:
    def __init__(self, reject: int | None = None, stall: bool = False) -> None:
        self.handshakes: list[dict[str, Any]] = []
        self.frames: list[dict[str, Any]] = []
        self.closed = 0  # connections the client closed
        self._script: list[dict[str, Any]] = []
        self.reject = reject
        self._lock = threading.Lock()
        self._stall_socket: socket.socket | None = None
        self._server: Server | None = None
        if stall:
            self._stall_socket = socket.socket()
            self._stall_socket.bind(("127.0.0.1", 0))
            self._stall_socket.listen(8)
            self.port = self._stall_socket.getsockname()[1]
        else:
            self._server = serve(self._handle, "127.0.0.1", 0, process_request=self._process_request,
                                 max_size=None, ping_interval=None, close_timeout=1)
            self.port = self._server.socket.getsockname()[1]
            threading.Thread(target=self._server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def add(self, *responses: dict[str, Any]) -> None:
        with self._lock:
            self._script.extend(responses)

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
        if self._stall_socket is not None:
            self._stall_socket.close()

    def __enter__(self) -> FakeCodexServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def wait_for_frames(self, n: int, timeout: float = 5) -> None:
        deadline = time.monotonic() + timeout
        while len(self.frames) < n and time.monotonic() < deadline:
            time.sleep(0.01)

    def _process_request(self, connection: ServerConnection, request: Request) -> Response | None:
        self.handshakes.append({"path": request.path, "headers": {k.lower(): v for k, v in request.headers.raw_items()}})
        if self.reject is not None:
            return Response(self.reject, "Refused", Headers({"content-length": "0"}), b"")
        return None

    def _handle(self, connection: ServerConnection) -> None:
        try:
            self._serve(connection)
        finally:
            self.closed += 1

    def _serve(self, connection: ServerConnection) -> None:
        for message in connection:
            frame = json.loads(message)
            self.frames.append(frame)
            with self._lock:
                response = self._script.pop(0) if self._script else {"content": [{"type": "text", "text": "ok"}]}
            events = response.get("events") or rendered(response, frame)
            if "close" in response:
                for event in events[: response.get("after", 0)]:
                    connection.send(json.dumps(event))
                connection.close(response["close"], response.get("reason", ""))
                return
            for event in events:
                connection.send(json.dumps(event))
