"""A fake classifier and image service on 127.0.0.1, speaking the wire formats pi 1.6.0 sends and expects.

Routes (point a provider's models.json ``baseUrl`` at the prefix):

* ``POST /<prefix>/systemone`` - TypeSafe's System One: ``{model, state, questions[, assets|images]}`` in,
  ``{answers, usage}`` out (``bool`` questions arrive as ``noul`` and are answered with ``noul``).
* ``POST /cf/run`` - Workers AI: ``{model, input: {...}}`` in; Cloudflare's envelope out, with a run
  record (``{state: "Completed", result}``) for third-party models and the bare output for ``@cf/``.
* ``POST /oa/decisions`` - OpenAI's Decisions API: ``{model, input, questions: [...]}`` in, answers as a list
  matched by ``name`` (``predicate`` for bool questions) out.
* ``POST /or/chat/completions`` - OpenRouter asked for images: answers with one PNG data URL and a text.

Answers are derived from the questions (first label, score 1.5, ``noul`` 0.75), so a test can check
them. ``requests`` logs each call's path, lower-cased headers and body; ``fail_next(status, body)``
queues an HTTP error as the next answer, ``pass_next()`` a normal answer ahead of a queued error.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.support.fakes.local_server import LocalServer, send_json

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="


def answers_for(questions: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for qid, question in questions.items():
        if question["type"] == "choice":
            labels = list(question["criteria"])
            out[qid] = {"type": "choice", "choice": labels[0], "confidence": 0.8,
                        "probabilities": {label: (0.8 if i == 0 else 0.2 / max(1, len(labels) - 1))
                                          for i, label in enumerate(labels)}}
        elif question["type"] == "score":
            out[qid] = {"type": "score", "score": 1.5, "confidence": 0.6}
        else:
            out[qid] = {"type": "noul", "noul": 0.75}
    return out


def decisions_for(questions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same answers as ``answers_for`` in the Decisions API's list form."""
    out: list[dict[str, Any]] = []
    for question in questions:
        if question["type"] == "choice":
            values = [c["value"] for c in question["choices"]]
            out.append({"name": question["name"], "type": "choice", "choice": values[0], "confidence": 0.8,
                        "probabilities": [{"value": v, "probability": 0.8 if i == 0 else 0.2 / max(1, len(values) - 1)}
                                          for i, v in enumerate(values)]})
        elif question["type"] == "score":
            out.append({"name": question["name"], "type": "score", "score": 1.5, "confidence": 0.6})
        else:
            out.append({"name": question["name"], "type": "predicate", "probability": 0.75})
    return out


USAGE = {"input_tokens": 1200, "output_tokens": 3}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Any

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, body: Any) -> None:
        send_json(self, status, body, compact=True)  # error bodies reach messages verbatim

    def do_POST(self) -> None:
        fake = self.server.fake
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
        fake.log(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
        time.sleep(fake.delay_s)
        failure = fake.take_failure()
        if failure is not None:
            self._send(*failure)
        elif self.path.endswith("/systemone"):
            self._send(200, {"answers": answers_for(body["questions"]), "usage": USAGE})
        elif self.path == "/oa/decisions":
            self._send(200, {"id": "dec-1", "answers": decisions_for(body["questions"]), "usage": USAGE})
        elif self.path == "/cf/run":
            output = {"answers": answers_for(body["input"]["questions"]), "usage": USAGE}
            if body["model"].startswith("@cf/"):
                self._send(200, {"success": True, "result": {"model": body["model"], **output}})
            else:
                self._send(200, {"success": True, "result": {"state": "Completed", "result": output}})
        elif self.path == "/or/chat/completions":
            message = {"role": "assistant", "content": "Here is your fox.",
                       "images": [{"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}]}
            self._send(200, {"id": "gen-1", "object": "chat.completion", "model": body["model"],
                             "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                             "usage": {"prompt_tokens": 20, "completion_tokens": 1290, "total_tokens": 1310}})
        else:
            self._send(404, {"error": {"message": f"no route {self.path}"}})


class FakeNonChatServer(LocalServer):
    handler = _Handler

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self._failures: list[tuple[int, Any] | None] = []
        self._lock = threading.Lock()
        self.delay_s = 0.0  # how long each answer takes (a slow service, for aborts)

    def log(self, path: str, headers: dict[str, str], body: Any) -> None:
        with self._lock:
            self.requests.append({"path": path, "headers": headers, "body": body})

    def fail_next(self, status: int, body: Any) -> None:
        with self._lock:
            self._failures.append((status, body))

    def pass_next(self, count: int = 1) -> None:
        with self._lock:
            self._failures.extend([None] * count)

    def take_failure(self) -> tuple[int, Any] | None:
        with self._lock:
            return self._failures.pop(0) if self._failures else None
