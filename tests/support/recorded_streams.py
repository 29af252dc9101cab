"""The corpus of recorded provider streams under ``tests/support/fixtures/streams`` and how to replay one.

``manifest.json`` lists every recording with the public recording it follows, its license and the
assistant message it describes (``expect``). ``replay`` serves a recording byte for byte from the
fake LLM server and runs it through the adapter's real HTTP path.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pi_coding_agent.ai.stream import StreamOptions, stream
from pi_coding_agent.ai.types import Context, Model
from tests.support.fakes.llm_server import FakeLLMServer

STREAMS = Path(__file__).resolve().parents[1] / "support" / "fixtures" / "streams"
MANIFEST: list[dict[str, Any]] = json.loads((STREAMS / "manifest.json").read_text())["recordings"]

# api -> (default provider, path appended to the server URL for baseUrl)
APIS = {
    "openai-completions": ("openai", "/v1"),
    "openai-responses": ("openai", "/v1"),
    "anthropic-messages": ("anthropic", ""),
    "google-generative-ai": ("google", "/v1beta"),
}
MODEL_ID = "test-model"
TOOLS: list[Any] = [
    {"name": name, "description": f"The {name} tool", "parameters": {"type": "object", "properties": {}}}
    for name in ("bash", "read", "write", "lookup_customer")
]


def api_of(entry: dict[str, Any]) -> str:
    return entry["file"].split("/", 1)[0]


def model_for(entry: dict[str, Any], url: str) -> Model:
    api = api_of(entry)
    provider, path = APIS[api]
    return {"id": MODEL_ID, "name": MODEL_ID, "api": api, "provider": entry.get("provider", provider),
            "baseUrl": url + path, "reasoning": False, "input": ["text"],
            "cost": {"input": 1, "output": 2, "cacheRead": 0.5, "cacheWrite": 1.25},
            "contextWindow": 200000, "maxTokens": 8192}


def context() -> Context:
    return {"systemPrompt": "Be brief.", "messages": [{"role": "user", "content": "hi", "timestamp": 1}],
            "tools": TOOLS}


def scripted(entry: dict[str, Any], chunk_size: int | None = None) -> dict[str, Any]:
    """The fake server's script item serving this recording."""
    response: dict[str, Any] = {"raw": (STREAMS / entry["file"]).read_bytes(), "status": entry.get("status", 200),
                                "contentType": entry.get("contentType", "text/event-stream")}
    if chunk_size:
        response["rawChunkSize"] = chunk_size
    return response


async def replay(entry: dict[str, Any], server: FakeLLMServer,
                 chunk_size: int | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Events and final message of one recording through the real adapter."""
    server.add(scripted(entry, chunk_size))
    s = stream(model_for(entry, server.url), context(), StreamOptions(api_key="key"))
    events = [event async for event in s]
    message: Any = await s.result()
    return events, message


async def rpc_messages(kind: str, api: str, entries: list[dict[str, Any]], root: Path) -> list[dict[str, Any]]:
    """The assistant message of each recording, replayed through ``pi --mode rpc`` (``kind``:
    ``"ours"`` or ``"reference"``) with a models.json provider of that API pointed at the fake server.

    Tool calls in a recording are really run by that pi (in a scratch directory); the requests
    that follow them get the fake server's default reply.
    """
    from tests.support.rpc_compare import Workspace

    with FakeLLMServer() as server:
        workspace = Workspace.create(root / kind / api, server.url, {"retry": {"enabled": False}})
        path = APIS[api][1]
        (workspace.agent_dir / "models.json").write_text(json.dumps({"providers": {"fake": {
            "baseUrl": server.url + path, "api": api, "apiKey": "dummy",
            "models": [{"id": "fake-model", "contextWindow": 200000, "maxTokens": 8192}]}}}))
        proc = await workspace.spawn(kind, "--no-session")
        messages = []
        try:
            for index, entry in enumerate(entries):
                # Requests after the recorded one (turns after tool calls) get the server's default "ok".
                server.add(scripted(entry))
                await proc.send({"type": "prompt", "message": "hi", "id": f"p{index}"})
                records = await proc.read_until(lambda r: r["type"] == "agent_settled")
                messages.append(next(r["message"] for r in records if r["type"] == "message_end"
                                     and r["message"]["role"] == "assistant"))
        finally:
            await proc.kill()
        return messages


MESSAGE_FIELDS = ("stopReason", "rawStopReason", "errorMessage", "responseId", "responseModel")


def view(message: dict[str, Any], expect: dict[str, Any]) -> dict[str, Any]:
    """The parts of ``message`` that ``expect`` speaks about, in its shape (made-up tool ids dropped)."""
    out: dict[str, Any] = {field: message.get(field) for field in MESSAGE_FIELDS if field in expect}
    content = []
    for block, wanted in zip(message["content"], expect["content"] + [{}] * len(message["content"]), strict=False):
        if block["type"] == "toolCall" and wanted and "id" not in wanted:
            block = {k: v for k, v in block.items() if k != "id"}
        content.append(block)
    out["content"] = content
    for key, value in expect.get("usage", {}).items():
        if not isinstance(value, dict):  # cost depends on the provider's name, not on the stream
            out[f"usage.{key}"] = message["usage"].get(key, 0)
    if "diagnostics" in expect:  # their timestamps are the receiver's
        out["diagnostics"] = [{k: v for k, v in d.items() if k != "timestamp"} for d in message.get("diagnostics", [])]
    return out


def expected_view(expect: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {field: expect[field] for field in MESSAGE_FIELDS if field in expect}
    out["content"] = expect["content"]
    out.update({f"usage.{k}": v for k, v in expect.get("usage", {}).items() if not isinstance(v, dict)})
    if "diagnostics" in expect:
        out["diagnostics"] = expect["diagnostics"]
    return out
