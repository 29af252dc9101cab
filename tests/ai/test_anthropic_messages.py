"""The anthropic-messages adapter over real HTTP against the scripted fake server."""

import json
from typing import Any

import pytest

from pi_coding_agent.ai.stream import StreamOptions, stream
from pi_coding_agent.ai.types import Context, Model, empty_usage

COST = {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75}
TOOLS = [
    {"name": "read", "description": "Read a file", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}},
    {"name": "bash", "description": "Run a command", "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}},
]


def claude(url: str, **extra: Any) -> Model:
    model: Model = {"id": "claude-test", "name": "Claude Test", "api": "anthropic-messages", "provider": "anthropic",
                    "baseUrl": url, "reasoning": True, "input": ["text", "image"], "cost": dict(COST),  # type: ignore[typeddict-item]
                    "contextWindow": 200000, "maxTokens": 64000}
    model.update(extra)  # type: ignore[typeddict-item]
    return model


def user(text: str) -> Any:
    return {"role": "user", "content": text, "timestamp": 1}


def ctx(*messages: Any, system: str | None = "You are terse.", tools: list[Any] | None = None) -> Context:
    context: Context = {"messages": list(messages)}
    if system:
        context["systemPrompt"] = system
    if tools:
        context["tools"] = tools
    return context


async def run(model: Model, context: Context, **options: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    s = stream(model, context, StreamOptions(api_key=options.pop("api_key", "test-key"), **options))
    events = [ev async for ev in s]
    return events, dict(await s.result())


async def test_text_stream_events_and_request(fake_llm):
    fake_llm.add({"content": [{"type": "text", "text": "Hello there, friend"}], "usage": {"input": 12, "output": 4}})
    events, msg = await run(claude(fake_llm.url), ctx(user("hi")))
    assert [e["type"] for e in events] == ["start", "text_start", "text_delta", "text_delta", "text_delta", "text_end", "done"]
    assert "".join(e["delta"] for e in events if e["type"] == "text_delta") == "Hello there, friend"
    assert msg["content"] == [{"type": "text", "text": "Hello there, friend"}]
    assert msg["stopReason"] == "stop" and msg["rawStopReason"] == "end_turn" and msg["responseId"] == "msg_fake_01"
    request = fake_llm.requests[0]
    assert request["path"] == "/v1/messages"
    assert request["headers"]["x-api-key"] == "test-key"
    assert request["headers"]["anthropic-version"] == "2023-06-01"
    assert "anthropic-beta" not in request["headers"]
    body = request["body"]
    assert list(body)[:4] == ["model", "messages", "max_tokens", "stream"]
    assert body["model"] == "claude-test" and body["stream"] is True
    assert body["thinking"] == {"type": "disabled"}  # a reasoning model at level off


async def test_thinking_signature_is_kept_and_replayed(fake_llm):
    fake_llm.add({"content": [{"type": "thinking", "thinking": "Let me consider this", "signature": "sig-abc"},
                              {"type": "text", "text": "Answer"}]},
                 {"content": [{"type": "text", "text": "Second"}]})
    model = claude(fake_llm.url)
    events, first = await run(model, ctx(user("q1")), thinking_level="high")
    assert first["content"][0] == {"type": "thinking", "thinking": "Let me consider this", "thinkingSignature": "sig-abc"}
    thinking_events = [e["type"] for e in events if e["type"].startswith("thinking")]
    assert thinking_events[0] == "thinking_start" and thinking_events[-1] == "thinking_end"
    await run(model, ctx(user("q1"), first, user("q2")), thinking_level="high")
    replayed = fake_llm.requests[1]["body"]["messages"][1]
    assert replayed == {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "Let me consider this", "signature": "sig-abc"}, {"type": "text", "text": "Answer"}]}


async def test_redacted_thinking_round_trip(fake_llm):
    fake_llm.add({"content": [{"type": "thinking", "redacted": True, "signature": "opaque=="}, {"type": "text", "text": "ok"}]},
                 {"content": [{"type": "text", "text": "ok"}]})
    model = claude(fake_llm.url)
    _, first = await run(model, ctx(user("q")), thinking_level="low")
    assert first["content"][0] == {"type": "thinking", "thinking": "[Reasoning redacted]",
                                   "thinkingSignature": "opaque==", "redacted": True}
    await run(model, ctx(user("q"), first, user("again")))
    assert fake_llm.requests[1]["body"]["messages"][1]["content"][0] == {"type": "redacted_thinking", "data": "opaque=="}



async def test_tool_results_are_grouped_into_one_user_message(fake_llm):
    calls = {"role": "assistant", "api": "anthropic-messages", "provider": "anthropic", "model": "claude-test",
             "stopReason": "toolUse", "timestamp": 2, "usage": empty_usage(), "content": [
                 {"type": "toolCall", "id": "call|1", "name": "read", "arguments": {"path": "a"}},
                 {"type": "toolCall", "id": "call_2", "name": "read", "arguments": {"path": "b"}}]}
    results = [{"role": "toolResult", "toolCallId": cid, "toolName": "read", "isError": err, "timestamp": 3,
                "content": [{"type": "text", "text": text}]}
               for cid, text, err in (("call|1", "A", False), ("call_2", "missing", True))]
    await run(claude(fake_llm.url), ctx(user("read both"), calls, *results, tools=TOOLS))
    messages = fake_llm.requests[0]["body"]["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[1]["content"][0]["id"] == "call_1"  # normalized to Anthropic's id alphabet
    assert messages[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "call_1", "content": "A", "is_error": False},
        {"type": "tool_result", "tool_use_id": "call_2", "content": "missing", "is_error": True,
         "cache_control": {"type": "ephemeral"}}]


async def test_usage_with_cache_fields_and_cost(fake_llm):
    fake_llm.add({"content": [{"type": "text", "text": "x"}],
                  "usage": {"input": 100, "output": 20, "cacheRead": 1000, "cacheWrite": 400}})
    _, msg = await run(claude(fake_llm.url), ctx(user("hi")))
    usage = msg["usage"]
    assert (usage["input"], usage["output"], usage["cacheRead"], usage["cacheWrite"]) == (100, 20, 1000, 400)
    assert usage["totalTokens"] == 1520
    expected = {"input": 100 * 3 / 1e6, "output": 20 * 15 / 1e6, "cacheRead": 1000 * 0.3 / 1e6, "cacheWrite": 400 * 3.75 / 1e6}
    for key, value in expected.items():
        assert usage["cost"][key] == pytest.approx(value)
    assert usage["cost"]["total"] == pytest.approx(sum(expected.values()))


def _cache_marks(body: dict[str, Any]) -> list[tuple[str, Any]]:
    marks = [("system", b["cache_control"]) for b in body.get("system", []) if "cache_control" in b]
    marks += [(f"tool:{t['name']}", t["cache_control"]) for t in body.get("tools", []) if "cache_control" in t]
    for i, m in enumerate(body["messages"]):
        if isinstance(m["content"], list):
            marks += [(f"message:{i}", b["cache_control"]) for b in m["content"] if "cache_control" in b]
    return marks


@pytest.mark.parametrize(("retention", "control"), [
    ("short", {"type": "ephemeral"}), ("long", {"type": "ephemeral", "ttl": "1h"}), ("none", None)])
async def test_cache_control_placement(fake_llm, retention, control):
    answer = {"role": "assistant", "api": "anthropic-messages", "provider": "anthropic", "model": "claude-test",
              "stopReason": "stop", "timestamp": 2, "usage": empty_usage(), "content": [{"type": "text", "text": "earlier"}]}
    await run(claude(fake_llm.url), ctx(user("first"), answer, user("second"), tools=TOOLS), cache_retention=retention)
    body = fake_llm.requests[0]["body"]
    expected = [] if control is None else [("system", control), ("tool:bash", control), ("message:2", control)]
    assert _cache_marks(body) == expected
    assert body["messages"][0]["content"] == "first"  # only the last user message becomes blocks
    if control is not None:
        assert body["messages"][2]["content"] == [{"type": "text", "text": "second", "cache_control": control}]


@pytest.mark.parametrize(("level", "budget"), [("minimal", 1024), ("low", 2048), ("medium", 8192), ("high", 16384), ("xhigh", 16384)])
async def test_budget_thinking_per_level(fake_llm, level, budget):
    model = claude(fake_llm.url, thinkingLevelMap={"xhigh": "high"})
    await run(model, ctx(user("think")), thinking_level=level, max_tokens=4000, temperature=0.5)
    request = fake_llm.requests[0]
    body = request["body"]
    assert body["thinking"] == {"type": "enabled", "budget_tokens": budget, "display": "summarized"}
    assert body["max_tokens"] == 4000 + budget  # the budget is added to the answer's room
    assert "temperature" not in body
    assert request["headers"]["anthropic-beta"] == "interleaved-thinking-2025-05-14"


async def test_budget_is_capped_by_the_model_output_limit(fake_llm):
    await run(claude(fake_llm.url, maxTokens=10000), ctx(user("think")), thinking_level="high")
    body = fake_llm.requests[0]["body"]
    assert body["max_tokens"] == 10000
    assert body["thinking"]["budget_tokens"] == 10000 - 1024


@pytest.mark.parametrize(("level", "effort"), [("minimal", "low"), ("low", "low"), ("medium", "medium"), ("high", "high"), ("xhigh", "max")])
async def test_adaptive_thinking_effort(fake_llm, level, effort):
    model = claude(fake_llm.url, compat={"forceAdaptiveThinking": True}, thinkingLevelMap={"xhigh": "max"})
    await run(model, ctx(user("think")), thinking_level=level)
    request = fake_llm.requests[0]
    assert request["body"]["thinking"] == {"type": "adaptive", "display": "summarized"}
    assert request["body"]["output_config"] == {"effort": effort}
    assert request["body"]["max_tokens"] == 64000
    assert "anthropic-beta" not in request["headers"]


async def test_non_reasoning_model_sends_no_thinking_but_temperature(fake_llm):
    await run(claude(fake_llm.url, reasoning=False), ctx(user("hi")), thinking_level="high", temperature=0.2)
    body = fake_llm.requests[0]["body"]
    assert "thinking" not in body and body["temperature"] == 0.2


@pytest.mark.parametrize(("status", "text"), [
    (529, '529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'),
    (429, '429 {"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}'),
    (400, '400 {"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}'),
])
async def test_http_error_texts(fake_llm, status, text):
    fake_llm.add({"status": status})
    events, msg = await run(claude(fake_llm.url), ctx(user("hi")))
    assert [e["type"] for e in events] == ["start", "error"]
    assert msg["stopReason"] == "error" and msg["errorMessage"] == text and msg["content"] == []


async def test_mid_stream_error_event(fake_llm):
    fake_llm.add({"content": [{"type": "text", "text": "partial answer"}],
                  "streamError": {"type": "overloaded_error", "message": "Overloaded"}})
    events, msg = await run(claude(fake_llm.url), ctx(user("hi")))
    assert msg["stopReason"] == "error"
    assert msg["errorMessage"] == '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'
    assert msg["content"] == [{"type": "text", "text": "partial answer"}]
    assert events[-1]["type"] == "error"


def _sse(name: str, data: dict[str, Any]) -> str:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n"


_START = {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
                                               "model": "claude-test", "content": [], "stop_reason": None,
                                               "usage": {"input_tokens": 3, "output_tokens": 0}}}


async def test_deltas_read_with_an_error_event_come_before_the_error(fake_llm):
    """One network read holds the message's start, two text deltas and an ``error`` event: the
    deltas still reach the consumer, in order, before the stream ends in the error."""
    body = (_sse("message_start", _START)
            + _sse("content_block_start", {"type": "content_block_start", "index": 0,
                                           "content_block": {"type": "text", "text": ""}})
            + "".join(_sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                                                  "delta": {"type": "text_delta", "text": piece}})
                      for piece in ("Hel", "lo"))
            + _sse("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}))
    fake_llm.add({"raw": body, "contentType": "text/event-stream"})
    events, msg = await run(claude(fake_llm.url), ctx(user("hi")))
    assert [e["type"] for e in events] == ["start", "text_start", "text_delta", "text_delta", "text_end", "error"]
    assert [e["delta"] for e in events if e["type"] == "text_delta"] == ["Hel", "lo"]
    assert msg["stopReason"] == "error" and "Overloaded" in msg["errorMessage"]
    assert msg["content"] == [{"type": "text", "text": "Hello"}]


async def test_refusal_is_an_error(fake_llm):
    fake_llm.add({"content": [{"type": "text", "text": "I can't"}], "rawStopReason": "refusal"})
    _, msg = await run(claude(fake_llm.url), ctx(user("hi")))
    assert msg["stopReason"] == "error" and msg["errorMessage"] == "The model refused to complete the request"




async def test_oauth_token_uses_bearer_and_claude_code_identity(fake_llm):
    await run(claude(fake_llm.url), ctx(user("hi"), tools=TOOLS), api_key="sk-ant-oat01-secret")
    request = fake_llm.requests[0]
    assert request["headers"]["authorization"] == "Bearer sk-ant-oat01-secret"
    assert "x-api-key" not in request["headers"]
    assert request["headers"]["anthropic-beta"].split(",")[:2] == ["claude-code-20250219", "oauth-2025-04-20"]
    system = request["body"]["system"]
    assert system[0]["text"].startswith("You are Claude Code") and system[1]["text"] == "You are terse."
    assert [t["name"] for t in request["body"]["tools"]] == ["Read", "Bash"]


async def test_oauth_tool_names_map_back_to_ours(fake_llm):
    fake_llm.add({"content": [{"type": "toolCall", "id": "t1", "name": "Bash", "arguments": {"command": "ls"}}]})
    _, msg = await run(claude(fake_llm.url), ctx(user("hi"), tools=TOOLS), api_key="sk-ant-oat01-secret")
    assert msg["content"][0]["name"] == "bash"


async def test_payload_hook_and_headers(fake_llm):
    seen: list[dict[str, Any]] = []

    async def on_payload(body: dict[str, Any]) -> dict[str, Any]:
        seen.append(body)
        return {**body, "metadata": {"user_id": "u1"}}

    model = claude(fake_llm.url, headers={"x-model-header": "m", "anthropic-beta": "custom-beta"})
    await run(model, ctx(user("hi")), on_payload=on_payload, headers={"x-option-header": "o"})
    request = fake_llm.requests[0]
    assert seen[0]["model"] == "claude-test"
    assert request["body"]["metadata"] == {"user_id": "u1"}
    assert request["headers"]["x-model-header"] == "m" and request["headers"]["x-option-header"] == "o"
    assert request["headers"]["anthropic-beta"] == "custom-beta"


async def test_missing_key_fails_before_any_request(fake_llm):
    _, msg = await run(claude(fake_llm.url), ctx(user("hi")), api_key=None)
    assert msg["errorMessage"] == "No API key for provider: anthropic"
    assert fake_llm.requests == []


async def test_mid_conversation_effort_markers_and_fallbacks(fake_llm):
    compat = {"forceAdaptiveThinking": True, "supportsMidConvoEffort": True,
              "allowedFallbackModels": [{"provider": "anthropic", "model": "claude-backup", "cost": dict(COST)}]}
    model = claude(fake_llm.url, compat=compat, thinkingLevelMap={"xhigh": "xhigh", "max": "max"})
    _, first = await run(model, ctx(user("one")), thinking_level="medium")
    assert first["providerThinkingLevel"] == "medium"
    await run(model, ctx(user("one"), first, user("two")), thinking_level="xhigh")
    request = fake_llm.requests[1]
    body = request["body"]
    assert [(m["role"], m.get("output_config")) for m in body["messages"]] == [
        ("user", None), ("system", {"effort": "medium"}), ("assistant", None), ("user", None),
        ("system", {"effort": "xhigh"})]
    assert body["messages"][3]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert body["thinking"]["block_binding"] == {"prefix_mismatch_behavior": "drop_block"}
    assert body["output_config"] == {"effort": "low"}  # fixed: it belongs to the cached prefix
    assert body["fallbacks"] == [{"model": "claude-backup"}]
    assert request["headers"]["anthropic-beta"] == ("server-side-fallback-2026-07-01,"
                                                    "mid-conversation-output-config-2026-07-01,"
                                                    "thinking-binding-controls-2026-08-01")
    await run(model, ctx(user("three")), thinking_level="off")
    assert fake_llm.requests[2]["body"]["thinking"] == {"type": "disabled"}
    assert all(m["role"] != "system" for m in fake_llm.requests[2]["body"]["messages"])


async def test_images_in_user_messages_and_tool_results(fake_llm):
    image = {"type": "image", "data": "aW1n", "mimeType": "image/png"}
    wire_image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "aW1n"}}
    calls = {"role": "assistant", "api": "anthropic-messages", "provider": "anthropic", "model": "claude-test",
             "stopReason": "toolUse", "timestamp": 2, "usage": empty_usage(), "content": [
                 {"type": "toolCall", "id": "ok", "name": "read", "arguments": {"path": "a.png"}},
                 {"type": "toolCall", "id": "bad", "name": "read", "arguments": {"path": "b.png"}}]}
    results = [{"role": "toolResult", "toolCallId": cid, "toolName": "read", "isError": cid == "bad", "timestamp": 3,
                "content": [image]} for cid in ("ok", "bad")]
    look = {"role": "user", "content": [{"type": "text", "text": "look"}, image], "timestamp": 1}
    await run(claude(fake_llm.url), ctx(look, calls, *results, tools=TOOLS), cache_retention="none")
    messages = fake_llm.requests[0]["body"]["messages"]
    assert messages[0]["content"] == [{"type": "text", "text": "look"}, wire_image]
    ok, bad, *trailing = messages[2]["content"]
    assert ok["content"][1] == wire_image and ok["content"][0]["type"] == "text"  # never an image alone
    assert bad["is_error"] is True and isinstance(bad["content"], str)  # error results carry text only
    assert trailing[0]["type"] == "text" and "bad" in trailing[0]["text"] and trailing[1] == wire_image


async def test_lone_surrogates_in_text_and_tool_input_become_replacement_characters(fake_llm):
    """A lone surrogate escape in a text delta or in streamed tool input is U+FFFD, not a failed reply."""
    body = (_sse("message_start", _START)
            + _sse("content_block_start", {"type": "content_block_start", "index": 0,
                                           "content_block": {"type": "text", "text": ""}})
            + _sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                                          "delta": {"type": "text_delta", "text": "half \ud83d"}})
            + _sse("content_block_stop", {"type": "content_block_stop", "index": 0})
            + _sse("content_block_start", {"type": "content_block_start", "index": 1, "content_block": {
                "type": "tool_use", "id": "toolu_1", "name": "read", "input": {}}})
            + _sse("content_block_delta", {"type": "content_block_delta", "index": 1, "delta": {
                "type": "input_json_delta", "partial_json": json.dumps({"path": "a\udc00.txt"})}})
            + _sse("content_block_stop", {"type": "content_block_stop", "index": 1})
            + _sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use"},
                                    "usage": {"output_tokens": 5}})
            + _sse("message_stop", {"type": "message_stop"}))
    fake_llm.add({"raw": body, "contentType": "text/event-stream"})
    _, msg = await run(claude(fake_llm.url), ctx(user("hi")))
    assert msg["stopReason"] == "toolUse", msg.get("errorMessage")
    assert msg["content"][0] == {"type": "text", "text": "half \ufffd"}
    assert msg["content"][1]["arguments"] == {"path": "a\ufffd.txt"}
