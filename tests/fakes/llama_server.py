"""A fake llama.cpp router on 127.0.0.1: its model list, load/unload, props and chat completions.

``models`` maps id -> ``{"status": {"value": ...}, "source": ...}`` entries as ``GET /models``
reports them (``{"data": [{"id", "object", "status", ...}]}``); ``POST /models/load`` and
``/models/unload`` flip a model's status after ``load_delay_s``, as the real router does in the
background. Chat completions under ``/v1`` answer with the text ``from llama`` in the OpenAI wire
format (``tests/fakes/wire_openai_completions.py``). ``requests`` logs every call; an ``api_key``
makes every route demand ``Authorization: Bearer <key>``.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import urlsplit

from tests.fakes import wire_openai_completions
from tests.fakes.local_server import LocalServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Any

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, body: Any, content_type: str = "application/json") -> None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _authorized(self) -> bool:
        key = self.server.fake.api_key
        return key is None or self.headers.get("authorization") == f"Bearer {key}"

    def do_GET(self) -> None:
        fake, parts = self.server.fake, urlsplit(self.path)
        fake.log("GET", self.path, None, self.headers.get("authorization"))
        if not self._authorized():
            self._send(401, {"error": {"message": "Invalid API Key", "type": "authentication_error"}})
        elif parts.path == "/models":
            self._send(200, {"object": "list", "data": fake.listing()})
        elif parts.path == "/props":
            self._send(200, {"models_autoload": fake.autoload, "chat_template": "{{ messages }}"})
        else:
            self._send(404, {"error": {"message": "File Not Found", "type": "not_found_error"}})

    def do_POST(self) -> None:
        fake, path = self.server.fake, urlsplit(self.path).path
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
        fake.log("POST", path, body, self.headers.get("authorization"))
        if not self._authorized():
            self._send(401, {"error": {"message": "Invalid API Key", "type": "authentication_error"}})
        elif path in ("/models/load", "/models/unload"):
            ok = fake.change(body.get("model", ""), "loaded" if path == "/models/load" else "unloaded")
            self._send(200 if ok else 400, {"success": True} if ok else {"error": {"message": "model not found"}})
        elif path == "/v1/chat/completions":
            events = wire_openai_completions.render_events({"content": [{"type": "text", "text": "from llama"}]},
                                                           {"body": body})
            self._send(200, b"".join(events), "text/event-stream")
        else:
            self._send(404, {"error": {"message": "File Not Found", "type": "not_found_error"}})



class FakeLlamaRouter(LocalServer):
    handler = _Handler

    def __init__(self, models: dict[str, dict[str, Any]], api_key: str | None = None, autoload: bool = False) -> None:
        self.models = models
        self.api_key = api_key
        self.autoload = autoload
        self.load_delay_s = 0.2
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def log(self, method: str, path: str, body: Any, authorization: str | None) -> None:
        with self.lock:
            self.requests.append({"method": method, "path": path, "body": body, "authorization": authorization})

    def posted(self, path: str) -> list[str]:
        return [r["body"]["model"] for r in self.requests if r["method"] == "POST" and r["path"] == path]

    def listing(self) -> list[dict[str, Any]]:
        with self.lock:
            return [{"id": model_id, "object": "model", "owned_by": "llamacpp", "created": 0, **entry}
                    for model_id, entry in self.models.items()]

    def change(self, model: str, status: str) -> bool:
        with self.lock:
            if model not in self.models:
                return False
            self.models[model]["status"] = {"value": "loading" if status == "loaded" else status}

        def settle() -> None:
            time.sleep(self.load_delay_s)
            with self.lock:
                self.models[model]["status"] = {"value": status}

        threading.Thread(target=settle, daemon=True).start()
        return True

