"""A protected MCP server and its authorization server on 127.0.0.1, in one thread, for the OAuth tests.

``/mcp`` answers JSON-RPC (initialize, tools/list with one tool ``whoami``, tools/call) only with a
valid bearer token, else 401 with ``resource_metadata``. The authorization server publishes RFC 8414
metadata at ``/as``, registers clients, approves every authorization at once (redirecting to the
client's loopback ``redirect_uri`` with ``code``, ``state`` and ``iss``), checks PKCE and refreshes.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit


class OAuthFixture:
    def __init__(self) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.server.fixture = self  # type: ignore[attr-defined]
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.valid_tokens: set[str] = set()
        self.codes: dict[str, tuple[str, str]] = {}  # code -> (challenge, redirect_uri)
        self.registrations: list[dict[str, Any]] = []
        self.issued = 0

    def __enter__(self) -> OAuthFixture:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def new_token(self) -> str:
        self.issued += 1
        token = f"tok-{self.issued}"
        self.valid_tokens = {token}
        return token


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    @property
    def fx(self) -> OAuthFixture:
        return self.server.fixture  # type: ignore[attr-defined,no-any-return]

    def _json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        base = self.fx.base
        if parts.path == "/.well-known/oauth-protected-resource/mcp":
            self._json(200, {"resource": f"{base}/mcp", "authorization_servers": [f"{base}/as"],
                             "scopes_supported": ["tools"]})
        elif parts.path == "/.well-known/oauth-authorization-server/as":
            self._json(200, {"issuer": f"{base}/as", "authorization_endpoint": f"{base}/as/authorize",
                             "token_endpoint": f"{base}/as/token", "registration_endpoint": f"{base}/as/register",
                             "code_challenge_methods_supported": ["S256"]})
        elif parts.path == "/as/authorize":
            query = {k: v[0] for k, v in parse_qs(parts.query).items()}
            assert query["code_challenge_method"] == "S256" and query["scope"] == "tools"
            code = secrets.token_hex(8)
            self.fx.codes[code] = (query["code_challenge"], query["redirect_uri"])
            target = f"{query['redirect_uri']}?{urlencode({'code': code, 'state': query['state'], 'iss': base + '/as'})}"
            self.send_response(302)
            self.send_header("Location", target)
            self.send_header("Content-Length", "0")
            self.end_headers()
        else:
            self._json(405 if parts.path == "/mcp" else 404, {})

    def do_DELETE(self) -> None:
        self._json(200, {})

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        path = urlsplit(self.path).path
        if path == "/as/register":
            body = json.loads(raw)
            self.fx.registrations.append(body)
            self._json(201, {"client_id": f"client-{len(self.fx.registrations)}", **body})
        elif path == "/as/token":
            self._token({k: v[0] for k, v in parse_qs(raw.decode()).items()})
        elif path == "/mcp":
            self._mcp(raw)
        else:
            self._json(404, {})

    def _token(self, form: dict[str, str]) -> None:
        if form["grant_type"] == "authorization_code":
            challenge, redirect = self.fx.codes.pop(form["code"], ("", ""))
            digest = base64.urlsafe_b64encode(hashlib.sha256(form["code_verifier"].encode()).digest()).rstrip(b"=")
            if digest.decode() != challenge or redirect != form["redirect_uri"]:
                self._json(400, {"error": "invalid_grant"})
                return
        elif form.get("refresh_token") != "refresh-1":
            self._json(400, {"error": "invalid_grant"})
            return
        self._json(200, {"access_token": self.fx.new_token(), "token_type": "Bearer", "expires_in": 3600,
                         "refresh_token": "refresh-1"})

    def _mcp(self, raw: bytes) -> None:
        token = self.headers.get("authorization", "").removeprefix("Bearer ")
        if token not in self.fx.valid_tokens:
            metadata = f"{self.fx.base}/.well-known/oauth-protected-resource/mcp"
            self._json(401, {"error": "invalid_token"}, {"WWW-Authenticate": f'Bearer resource_metadata="{metadata}"'})
            return
        message = json.loads(raw)
        if "id" not in message:
            self._json(202, {})
            return
        method = message["method"]
        if method == "initialize":
            result: Any = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                           "serverInfo": {"name": "secure", "version": "1"}}
        elif method == "tools/list":
            result = {"tools": [{"name": "whoami", "description": "The token used", "inputSchema": {"type": "object"}}]}
        else:
            result = {"content": [{"type": "text", "text": f"authorized by token #{token.removeprefix('tok-')}"}]}
        self._json(200, {"jsonrpc": "2.0", "id": message["id"], "result": result}, {"Mcp-Session-Id": "s1"})
