"""An OpenAI Responses stream that ends in an ``error`` event with nested details: the code stays in
the error text (``insufficient_quota: …``) and decides the retry, beside the reference pi 1.6.0, whose
OpenAI SDK keeps only the message (so it does not retry a ``rate_limit_exceeded`` whose message does
not say "rate limit")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.fakes.llm_server import FakeLLMServer
from tests.support.rpc_compare import Conversation, Workspace, needs_reference

QUOTA = {"type": "insufficient_quota", "code": "insufficient_quota",
         "message": "You exceeded your current quota, please check your plan and billing details."}
RATE = {"type": "tokens", "code": "rate_limit_exceeded", "message": "Please slow down."}


def _stream(error: dict[str, Any]) -> dict[str, Any]:
    created = {"type": "response.created", "response": {"id": "r1", "status": "in_progress", "output": []}}
    body = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n"
                   for e in (created, {"type": "error", "sequence_number": 1, "error": {**error, "param": None}}))
    return {"raw": body, "status": 200, "contentType": "text/event-stream"}


async def _errors(kind: str, root: Path, error: dict[str, Any]) -> tuple[int, list[str]]:
    """Requests sent (a retry adds one) and the error texts of the assistant messages."""
    with FakeLLMServer() as server:
        server.add(_stream(error), _stream(error))
        ws = Workspace.create(root / kind, server.url, settings={"retry": {"baseDelayMs": 10, "maxRetries": 1}})
        ws.set_model("openai-responses")
        pi = await ws.spawn(kind, "--no-session")
        try:
            records = await Conversation(pi, server, ws).prompt("hi")
        finally:
            await pi.kill()
        return len(server.requests), [r["message"]["errorMessage"] for r in records if r["type"] == "message_end"
                                      and r["message"]["role"] == "assistant"]


async def test_the_code_is_kept_and_classifies(tmp_path: Path) -> None:
    assert await _errors("ours", tmp_path / "q", QUOTA) == (1, [f"insufficient_quota: {QUOTA['message']}"])
    assert await _errors("ours", tmp_path / "r", RATE) == (2, ["rate_limit_exceeded: Please slow down."] * 2)


@needs_reference
async def test_the_message_is_the_references(tmp_path: Path) -> None:
    for name, error in (("q", QUOTA), ("r", RATE)):
        _, ours = await _errors("ours", tmp_path / name, error)
        _, theirs = await _errors("reference", tmp_path / name, error)
        assert ours[0] == f"{error['code']}: {theirs[0]}"
