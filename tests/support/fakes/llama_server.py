"""A fake llama.cpp router on 127.0.0.1: its model list, load/unload, props and chat completions.

``models`` maps id -> ``{"status": {"value": ...}, "source": ...}`` entries as ``GET /models``
reports them (``{"data": [{"id", "object", "status", ...}]}``); ``POST /models/load`` and
``/models/unload`` flip a model's status after ``load_delay_s``, as the real router does in the
background. Chat completions under ``/v1`` answer with the text ``from llama`` in the OpenAI wire
format (``tests/support/fakes/wire_openai_completions.py``). For classification it answers ``/tokenize``,
``/apply-template`` and ``/completion`` (next-token log-probabilities of answer labels) and
``/v1/systemone`` for decision models. ``requests`` logs every call; an ``api_key`` makes every
route demand ``Authorization: Bearer <key>``.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import urlsplit

from tests.support.fakes import wire_openai_completions
from tests.support.fakes.local_server import LocalServer


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
        elif path in CLASSIFY_ROUTES:
            self._send(200, CLASSIFY_ROUTES[path](fake, body))
        elif path == "/v1/chat/completions":
            events = wire_openai_completions.render_events({"content": [{"type": "text", "text": "from llama"}]},
                                                           {"body": body})
            self._send(200, b"".join(events), "text/event-stream")
        else:
            self._send(404, {"error": {"message": "File Not Found", "type": "not_found_error"}})



# --------------------------------------------------------------------------- classification routes
# A toy vocabulary: "\n" is one token, every other run of characters between newlines is one token
# (ids by first sight); ``/completion`` ranks the answer labels by ``LABEL_LOGPROBS``.
LABEL_LOGPROBS = {"A": -0.2, "B": -1.9, "C": -3.0, "Yes": -0.4, "No": -1.2, "0": -2.5, "1": -0.3, "2": -1.6}


def _tokens(fake: Any, content: str) -> list[int]:
    out = []
    for part in (p for p in content.replace("\n", "\0\n\0").split("\0") if p):
        with fake.lock:
            out.append(fake.vocabulary.setdefault(part, len(fake.vocabulary) + 1))
    return out


def _tokenize(fake: Any, body: dict[str, Any]) -> dict[str, Any]:
    return {"tokens": _tokens(fake, body["content"])}


def _apply_template(fake: Any, body: dict[str, Any]) -> dict[str, Any]:
    messages = "".join(f"<|{m['role']}|>{m['content']}<|end|>" for m in body["messages"])
    return {"prompt": f"{messages}<|assistant|>\n<think>"}


def _completion(fake: Any, body: dict[str, Any]) -> dict[str, Any]:
    top = [{"id": _tokens(fake, label)[0], "token": label, "logprob": logprob, "bytes": []}
           for label, logprob in LABEL_LOGPROBS.items()]
    return {"content": "A", "completion_probabilities": [
        {"id": top[0]["id"], "token": "A", "logprob": -0.2, "bytes": [], "top_logprobs": top[: body["n_probs"]]}]}


def _systemone(fake: Any, body: dict[str, Any]) -> dict[str, Any]:
    from tests.support.fakes.nonchat_server import USAGE, answers_for

    return {"answers": answers_for(body["questions"]), "usage": USAGE}


CLASSIFY_ROUTES = {"/tokenize": _tokenize, "/apply-template": _apply_template, "/completion": _completion,
                   "/v1/systemone": _systemone}


class FakeLlamaRouter(LocalServer):
    handler = _Handler

    def __init__(self, models: dict[str, dict[str, Any]], api_key: str | None = None, autoload: bool = False) -> None:
        self.models = models
        self.api_key = api_key
        self.autoload = autoload
        self.load_delay_s = 0.2
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.vocabulary: dict[str, int] = {}

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

