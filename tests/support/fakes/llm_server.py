"""A scripted fake LLM server speaking the providers' real streaming wire formats over HTTP/1.1.

The server runs in a background thread on 127.0.0.1 (a free port) and answers every request with
the next *scripted response* (one FIFO shared by all routes). A scripted response is wire-neutral::

    {"content": [{"type": "text", "text": "..."},
                 {"type": "thinking", "thinking": "...", "signature": "sig-abc"},
                 {"type": "toolCall", "id": "call_1", "name": "bash", "arguments": {"command": "ls"}}],
     "stopReason": "stop" | "length" | "toolUse",     # optional; toolUse implied by tool calls
     "usage": {"input": 100, "output": 20, "cacheRead": 0, "cacheWrite": 0},
     "status": 529, "body": {...}, "headers": {"retry-after": "1"},  # an HTTP error instead of a stream
                              # (body: JSON; a string is sent as plain text; null = empty body)
     "chunkSize": 8,          # characters of text/arguments per delta (default 8)
     "chunkDelayMs": 0,       # pause before each SSE event after the first (slow streams)
     "cutAfterChunks": 5}     # drop the connection after N SSE events (no chunked terminator)

A *raw replay* serves a recorded body byte for byte instead of rendering one, whatever the route::

    {"raw": "<body text or bytes>", "status": 200, "contentType": "text/event-stream",
     "rawChunkSize": 64,      # bytes per HTTP chunk (default: the whole body in one chunk)
     "headers": {...}}

With an empty script the reply is the text ``ok``, so a stray request never hangs.

Routing by request path to a renderer module in this directory, imported on first use (a missing
renderer only breaks its own route):

* ``POST .../chat/completions``                     -> ``wire_openai_completions.py``
* ``POST .../responses``                            -> ``wire_openai_responses.py``
* ``POST .../v1/messages``                          -> ``wire_anthropic.py``
* ``POST .../models/<model>:streamGenerateContent`` -> ``wire_google.py``
* ``POST .../model/<model>/converse-stream``        -> ``wire_bedrock.py`` (binary frames; a renderer's
  ``CONTENT_TYPE`` replaces ``text/event-stream``)
* ``POST .../messages`` (not ``/v1/messages``)      -> ``wire_pi_messages.py``

Renderer interface (each module provides both functions)::

    def render_events(response: dict, request: dict) -> list[bytes]
        # every item is ONE complete SSE event, e.g. b"data: {...}\\n\\n"
        # (``request`` is the logged request: path, method, headers, body)
    def render_error_body(response: dict) -> dict
        # the provider's usual JSON error body for response["status"]

Streams are sent with ``Transfer-Encoding: chunked``, one HTTP chunk per SSE event, flushed at once;
``cutAfterChunks`` closes the socket without the final zero-length chunk, which a client sees as an
incomplete body. ``disconnects`` counts streams the client closed before the end, and
``wait_for_disconnects(n)`` waits for them (abort tests).

Command line (benchmarks, manual comparison with the reference pi)::

    python -m tests.support.fakes.llm_server --script script.json [--port 0] [--tls cert.pem key.pem]

prints the base URL on stdout and serves until interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import re
import socket
import ssl
import sys
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent
DEFAULT_RESPONSE: dict[str, Any] = {"content": [{"type": "text", "text": "ok"}]}

ROUTES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"/chat/completions$"), "wire_openai_completions"),
    (re.compile(r"/responses$"), "wire_openai_responses"),
    (re.compile(r"/v1/messages$"), "wire_anthropic"),
    (re.compile(r"/models/[^/]+:streamGenerateContent$"), "wire_google"),
    (re.compile(r"/model/[^/]+/converse-stream$"), "wire_bedrock"),
    (re.compile(r"/messages$"), "wire_pi_messages"),  # after Anthropic's /v1/messages
]

_renderers_lock = threading.Lock()


def load_renderer(name: str) -> ModuleType:
    """Import the renderer ``tests.support.fakes.<name>`` on first use (the checkout root is put on sys.path)."""
    with _renderers_lock:
        root = str(HERE.parent.parent)
        if root not in sys.path:
            sys.path.append(root)
        return importlib.import_module(f"tests.support.fakes.{name}")


def renderer_for(path: str) -> ModuleType | None:
    route = path.split("?", 1)[0]
    for pattern, name in ROUTES:
        if pattern.search(route):
            return load_renderer(name)
    return None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet: tests read the request log instead
        pass

    def do_GET(self) -> None:
        self._send_json(404, {"error": {"message": "not found", "type": "invalid_request_error"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.headers.get("content-encoding") == "zstd":  # the Codex backend's compressed bodies
            from backports import zstd

            raw = zstd.decompress(raw)
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode(errors="replace")
        request = {
            "path": self.path,
            "method": self.command,
            "headers": {k.lower(): v for k, v in self.headers.items()},
            "body": body,
        }
        fake = self.server.fake
        response = fake.next_response()
        fake.raw_bodies.append(raw)
        fake.log_request(request)
        try:
            renderer = renderer_for(self.path)
        except (ImportError, FileNotFoundError) as exc:
            self._send_json(501, {"error": {"message": f"no renderer: {exc}", "type": "server_error"}})
            return
        if renderer is None:
            self._send_json(404, {"error": {"message": f"unknown route {self.path}", "type": "invalid_request_error"}})
            return
        if "raw" in response:
            self._replay(response)
            return
        if "status" in response:
            body_out = response["body"] if "body" in response else renderer.render_error_body(response)
            self._send_json(int(response["status"]), body_out, response.get("headers") or {})
            return
        self._stream(renderer.render_events(response, request), response,
                     getattr(renderer, "CONTENT_TYPE", "text/event-stream"))

    def _send_json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        """JSON for dicts/lists; a ``str`` body is sent verbatim as text, ``None`` as an empty body."""
        raw = isinstance(body, str | bytes)
        data = b"" if body is None else body.encode() if isinstance(body, str) else body if raw else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "text/plain" if raw else "application/json")
        self.send_header("content-length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _stream(self, events: list[bytes], response: dict[str, Any], content_type: str) -> None:
        self.send_response(200)
        self.send_header("content-type", content_type)
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        for key, value in (response.get("headers") or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self._write_chunked(self._paced(events, response))

    def _paced(self, events: list[bytes], response: dict[str, Any]) -> Iterator[bytes | None]:
        """The events with the script's pauses; None where the connection is to be dropped."""
        delay = response.get("chunkDelayMs", 0) / 1000
        cut = response.get("cutAfterChunks")
        for sent, event in enumerate(events):
            if cut is not None and sent >= cut:
                yield None
                return
            if delay and sent:
                time.sleep(delay)
            if self.server.fake.stopping:
                yield None
                return
            yield event

    def _write_chunked(self, pieces: Iterable[bytes | None]) -> None:
        """One HTTP chunk per piece, then the terminator; a None piece drops the connection instead."""
        try:
            for piece in pieces:
                if piece is None:
                    self._drop_connection()
                    return
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            self.server.fake.note_disconnect()
            self.close_connection = True

    def _replay(self, response: dict[str, Any]) -> None:
        """Serve a recorded body byte for byte (chunked, ``rawChunkSize`` bytes per HTTP chunk)."""
        raw = response["raw"]
        data = raw.encode() if isinstance(raw, str) else bytes(raw)
        size = int(response.get("rawChunkSize") or len(data) or 1)
        self.send_response(int(response.get("status", 200)))
        self.send_header("content-type", response.get("contentType", "text/event-stream"))
        self.send_header("transfer-encoding", "chunked")
        for key, value in (response.get("headers") or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self._write_chunked(data[start : start + size] for start in range(0, len(data), size))

    def _drop_connection(self) -> None:
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, fake: FakeLLMServer, port: int) -> None:
        self.fake = fake
        super().__init__(("127.0.0.1", port), _Handler)

    def get_request(self) -> tuple[socket.socket, Any]:
        """The accepted connection with Nagle's algorithm off, as real API servers run: the response's
        separate writes (headers, then each event) otherwise wait for the client's delayed ACK,
        40 ms on Linux, which every https first prompt paid before its first byte."""
        conn, addr = super().get_request()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn, addr


class FakeLLMServer:
    """Scripted HTTP server; see the module docstring for the script format and routes."""

    def __init__(self, port: int = 0, tls: ssl.SSLContext | None = None) -> None:
        self._port = port
        self._tls = tls  # a server-side context: serve https:// instead of http://
        self._script: deque[dict[str, Any]] = deque()
        self._cond = threading.Condition()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None
        self.requests: list[dict[str, Any]] = []
        self.raw_bodies: list[bytes] = []  # request bodies as sent (signature checks), in request order
        self.disconnects = 0
        self.stopping = False
        self.url = ""

    def start(self) -> FakeLLMServer:
        self._httpd = _Server(self, self._port)
        if self._tls is not None:
            self._httpd.socket = self._tls.wrap_socket(self._httpd.socket, server_side=True)
        self.url = f"{'https' if self._tls else 'http'}://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,), name="fake-llm", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping = True
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def add(self, *responses: dict[str, Any]) -> None:
        """Append scripted responses (served in order, whatever the route)."""
        with self._cond:
            self._script.extend(responses)

    def next_response(self) -> dict[str, Any]:
        with self._cond:
            return self._script.popleft() if self._script else DEFAULT_RESPONSE

    def log_request(self, request: dict[str, Any]) -> None:
        with self._cond:
            self.requests.append(request)
            self._cond.notify_all()

    def note_disconnect(self) -> None:
        with self._cond:
            self.disconnects += 1
            self._cond.notify_all()

    def wait_for_requests(self, n: int, timeout: float = 10) -> None:
        """Block until at least ``n`` requests were received (TimeoutError otherwise)."""
        self._wait(lambda: len(self.requests) >= n, timeout, f"{n} requests")

    def wait_for_disconnects(self, n: int, timeout: float = 10) -> None:
        """Block until the client dropped ``n`` streams before their end (TimeoutError otherwise)."""
        self._wait(lambda: self.disconnects >= n, timeout, f"{n} disconnects")

    def _wait(self, done: Any, timeout: float, what: str) -> None:
        with self._cond:
            if not self._cond.wait_for(done, timeout):
                raise TimeoutError(f"fake LLM server: waited {timeout}s for {what}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Serve a scripted fake LLM over HTTP.")
    parser.add_argument("--script", help="JSON file holding a list of scripted responses")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"), help="serve https:// with this certificate")
    args = parser.parse_args(argv)
    tls = None
    if args.tls:
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(*args.tls)
    server = FakeLLMServer(args.port, tls)
    if args.script:
        server.add(*json.loads(Path(args.script).read_text()))
    server.start()
    print(server.url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


if __name__ == "__main__":
    main(sys.argv[1:])
