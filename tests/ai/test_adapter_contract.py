"""What every wire adapter guarantees, checked once per API over real HTTP to the fake server.

Abort closes the connection and keeps the partial text, a cut stream is a retryable error that
keeps what arrived, and tool-call arguments split across chunks come back whole. API-specific
behaviour (request bodies, error texts, thinking) stays in each adapter's own test file.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from pi_coding_agent.ai.abort import AbortSignal
from pi_coding_agent.ai.errors import is_retryable_error
from pi_coding_agent.ai.stream import StreamOptions, stream
from pi_coding_agent.ai.types import Context, Model
from tests.support.fakes.llm_server import FakeLLMServer

# api -> (provider, path appended to the server URL for baseUrl, model id)
APIS = {
    "openai-completions": ("openai", "/v1", "gpt-test"),
    "openai-responses": ("openai", "/v1", "gpt-test"),
    "anthropic-messages": ("anthropic", "", "claude-test"),
    "google-generative-ai": ("google", "/v1beta", "gemini-2.5-flash"),
}
TOOLS: list[Any] = [{"name": "bash", "description": "Run a command", "parameters": {
    "type": "object", "properties": {"command": {"type": "string"}, "timeout": {"type": "number"}},
    "required": ["command"]}}]


def _model(api: str, url: str) -> Model:
    provider, path, model_id = APIS[api]
    return {"id": model_id, "name": model_id, "api": api, "provider": provider, "baseUrl": url + path,
            "reasoning": False, "input": ["text"], "cost": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0},
            "contextWindow": 100000, "maxTokens": 4096}


def _context() -> Context:
    return {"systemPrompt": "Be brief.", "messages": [{"role": "user", "content": "hi", "timestamp": 1}],
            "tools": TOOLS}


async def _events(api: str, server: FakeLLMServer, **options: Any) -> tuple[list[dict[str, Any]], Any]:
    s = stream(_model(api, server.url), _context(), StreamOptions(api_key="key", **options))
    events = [event async for event in s]
    return events, await s.result()


@pytest.mark.parametrize("api", sorted(APIS))
async def test_abort_closes_the_connection_and_keeps_partial_text(api: str, fake_llm: FakeLLMServer) -> None:
    fake_llm.add({"content": [{"type": "text", "text": "y" * 800}], "chunkDelayMs": 20})
    signal = AbortSignal()
    s = stream(_model(api, fake_llm.url), _context(), StreamOptions(api_key="key", signal=signal))
    deltas = 0
    async for event in s:
        if event["type"] == "text_delta":
            deltas += 1
            if deltas == 3:
                signal.abort()
    message: Any = await s.result()
    assert message["stopReason"] == "aborted" and message["errorMessage"] == "Request was aborted"
    assert 0 < len(message["content"][0]["text"]) < 800
    await asyncio.to_thread(fake_llm.wait_for_disconnects, 1)


@pytest.mark.parametrize("api", sorted(APIS))
async def test_cut_stream_is_a_retryable_error_keeping_what_arrived(api: str, fake_llm: FakeLLMServer) -> None:
    text = "word " * 60  # about 75 chunks of 4 characters: the cut falls inside the text for every format
    fake_llm.add({"content": [{"type": "text", "text": text}], "chunkSize": 4, "cutAfterChunks": 20})
    events, message = await _events(api, fake_llm)
    assert message["stopReason"] == "error" and is_retryable_error(message), message.get("errorMessage")
    kept = message["content"][0]["text"]
    assert kept and text.startswith(kept) and len(kept) < len(text)
    assert [e["type"] for e in events[-2:]] == ["text_end", "error"]


@pytest.mark.parametrize("api", sorted(APIS))
async def test_tool_call_arguments_split_across_chunks_come_back_whole(api: str, fake_llm: FakeLLMServer) -> None:
    arguments = {"command": "ls -la /tmp && echo 'done'", "timeout": 5}
    fake_llm.add({"content": [{"type": "toolCall", "id": "call_1", "name": "bash", "arguments": arguments}],
                  "chunkSize": 3})
    events, message = await _events(api, fake_llm)
    start = next(e for e in events if e["type"] == "toolcall_start")
    end = next(e for e in events if e["type"] == "toolcall_end")
    assert start["toolName"] == "bash" and start["id"] == end["toolCall"]["id"]
    assert json.loads("".join(e["delta"] for e in events if e["type"] == "toolcall_delta")) == arguments
    assert end["toolCall"]["arguments"] == arguments and end["toolCall"]["name"] == "bash"
    assert message["stopReason"] == "toolUse" and message["content"][-1] == end["toolCall"]
