"""The google-generative-ai adapter over real HTTP against the scripted fake server."""

from typing import Any

import pytest

from pi_coding_agent.ai.stream import StreamOptions, stream
from pi_coding_agent.ai.types import Context, Model, empty_usage

TOOLS = [{"name": "bash", "description": "Run a command",
          "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}]


def gemini(url: str, model_id: str = "gemini-2.5-flash", **extra: Any) -> Model:
    model: Model = {"id": model_id, "name": model_id, "api": "google-generative-ai", "provider": "google",
                    "baseUrl": f"{url}/v1beta", "reasoning": True, "input": ["text", "image"],
                    "cost": {"input": 0.3, "output": 2.5, "cacheRead": 0.03, "cacheWrite": 0},
                    "contextWindow": 1048576, "maxTokens": 65536}
    model.update(extra)  # type: ignore[typeddict-item]
    return model


def user(text: str) -> Any:
    return {"role": "user", "content": text, "timestamp": 1}


def ctx(*messages: Any, tools: list[Any] | None = None) -> Context:
    context: Context = {"systemPrompt": "Be brief.", "messages": list(messages)}
    if tools:
        context["tools"] = tools
    return context


async def run(model: Model, context: Context, **options: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    s = stream(model, context, StreamOptions(api_key=options.pop("api_key", "g-key"), **options))
    events = [ev async for ev in s]
    return events, dict(await s.result())


async def test_text_stream_and_request_shape(fake_llm):
    fake_llm.add({"content": [{"type": "text", "text": "Hello from Gemini"}], "usage": {"input": 10, "output": 3}})
    events, msg = await run(gemini(fake_llm.url), ctx(user("hi"), tools=TOOLS), max_tokens=1000, temperature=0.3)
    assert [e["type"] for e in events] == ["start", "text_start", "text_delta", "text_delta", "text_delta", "text_end", "done"]
    assert msg["content"] == [{"type": "text", "text": "Hello from Gemini"}]
    assert msg["stopReason"] == "stop" and msg["responseId"] == "fake-response-01"
    request = fake_llm.requests[0]
    assert request["path"] == "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    assert request["headers"]["x-goog-api-key"] == "g-key"
    body = request["body"]
    assert list(body) == ["contents", "systemInstruction", "tools", "generationConfig"]
    assert body["contents"] == [{"parts": [{"text": "hi"}], "role": "user"}]
    assert body["systemInstruction"] == {"parts": [{"text": "Be brief."}], "role": "user"}
    assert body["tools"] == [{"functionDeclarations": [
        {"name": "bash", "description": "Run a command", "parametersJsonSchema": TOOLS[0]["parameters"]}]}]
    assert body["generationConfig"] == {"temperature": 0.3, "maxOutputTokens": 1000, "thinkingConfig": {"thinkingBudget": 0}}


async def test_thinking_then_function_call_with_signatures_and_replay(fake_llm):
    fake_llm.add({"content": [{"type": "thinking", "thinking": "Considering options", "signature": "c2lnMQ=="},
                              {"type": "toolCall", "name": "bash", "arguments": {"command": "ls"}, "thoughtSignature": "c2lnMg=="}],
                  "stopReason": "toolUse"},
                 {"content": [{"type": "text", "text": "done"}]})
    model = gemini(fake_llm.url)
    events, first = await run(model, ctx(user("list"), tools=TOOLS), thinking_level="medium")
    thinking, call = first["content"]
    assert thinking == {"type": "thinking", "thinking": "Considering options", "thinkingSignature": "c2lnMQ=="}
    assert call["name"] == "bash" and call["arguments"] == {"command": "ls"} and call["thoughtSignature"] == "c2lnMg=="
    assert call["id"].startswith("bash_")
    assert first["stopReason"] == "toolUse"
    types = [e["type"] for e in events]
    assert types[-5:] == ["thinking_end", "toolcall_start", "toolcall_delta", "toolcall_end", "done"]
    result = {"role": "toolResult", "toolCallId": call["id"], "toolName": "bash", "isError": False, "timestamp": 3,
              "content": [{"type": "text", "text": "a.txt"}]}
    await run(model, ctx(user("list"), first, result), thinking_level="medium")
    contents = fake_llm.requests[1]["body"]["contents"]
    assert contents[1] == {"role": "model", "parts": [
        {"text": "Considering options", "thought": True, "thoughtSignature": "c2lnMQ=="},
        {"functionCall": {"args": {"command": "ls"}, "name": "bash"}, "thoughtSignature": "c2lnMg=="}]}
    assert contents[2] == {"role": "user", "parts": [{"functionResponse": {"name": "bash", "response": {"output": "a.txt"}}}]}


async def test_signatures_from_another_model_are_not_replayed(fake_llm):
    other = {"role": "assistant", "api": "google-generative-ai", "provider": "google", "model": "gemini-2.0-flash",
             "stopReason": "stop", "timestamp": 2, "usage": empty_usage(),
             "content": [{"type": "text", "text": "earlier", "textSignature": "c2lnMw=="}]}
    await run(gemini(fake_llm.url), ctx(user("a"), other, user("b")))
    assert fake_llm.requests[0]["body"]["contents"][1] == {"parts": [{"text": "earlier"}], "role": "model"}


async def test_gemini3_sends_call_ids_and_groups_function_responses(fake_llm):
    calls = {"role": "assistant", "api": "google-generative-ai", "provider": "google", "model": "gemini-3-pro-preview",
             "stopReason": "toolUse", "timestamp": 2, "usage": empty_usage(), "content": [
                 {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "a"}},
                 {"type": "toolCall", "id": "c2", "name": "bash", "arguments": {"command": "b"}}]}
    results = [{"role": "toolResult", "toolCallId": cid, "toolName": "bash", "isError": cid == "c2", "timestamp": 3,
                "content": [{"type": "text", "text": cid}]} for cid in ("c1", "c2")]
    await run(gemini(fake_llm.url, "gemini-3-pro-preview"), ctx(user("go"), calls, *results))
    contents = fake_llm.requests[0]["body"]["contents"]
    assert [p["functionCall"]["id"] for p in contents[1]["parts"]] == ["c1", "c2"]
    assert contents[2]["parts"] == [
        {"functionResponse": {"name": "bash", "response": {"output": "c1"}, "id": "c1"}},
        {"functionResponse": {"name": "bash", "response": {"error": "c2"}, "id": "c2"}}]


async def test_usage_counts_cached_prompt_and_thoughts(fake_llm):
    fake_llm.add({"content": [{"type": "text", "text": "x"}],
                  "usage": {"input": 100, "output": 30, "cacheRead": 40, "reasoning": 10}})
    _, msg = await run(gemini(fake_llm.url), ctx(user("hi")))
    usage = msg["usage"]
    assert {k: usage[k] for k in ("input", "output", "cacheRead", "cacheWrite", "reasoning", "totalTokens")} == {
        "input": 100, "output": 30, "cacheRead": 40, "cacheWrite": 0, "reasoning": 10, "totalTokens": 170}
    assert usage["cost"]["input"] == pytest.approx(100 * 0.3 / 1e6)
    assert usage["cost"]["output"] == pytest.approx(30 * 2.5 / 1e6)
    assert usage["cost"]["cacheRead"] == pytest.approx(40 * 0.03 / 1e6)
    assert usage["cost"]["total"] == pytest.approx((100 * 0.3 + 30 * 2.5 + 40 * 0.03) / 1e6)


@pytest.mark.parametrize(("model_id", "level", "config"), [
    ("gemini-2.5-flash", "minimal", {"includeThoughts": True, "thinkingBudget": 128}),
    ("gemini-2.5-flash", "high", {"includeThoughts": True, "thinkingBudget": 24576}),
    ("gemini-2.5-pro", "high", {"includeThoughts": True, "thinkingBudget": 32768}),
    ("gemini-2.5-flash-lite", "minimal", {"includeThoughts": True, "thinkingBudget": 512}),
    ("gemini-2.0-flash-thinking", "medium", {"includeThoughts": True, "thinkingBudget": -1}),
    ("gemini-3-pro-preview", "low", {"includeThoughts": True, "thinkingLevel": "LOW"}),
    ("gemini-3-flash-preview", "medium", {"includeThoughts": True, "thinkingLevel": "MEDIUM"}),
    ("gemini-2.5-flash", "off", {"thinkingBudget": 0}),
])
async def test_thinking_config_per_level(fake_llm, model_id, level, config):
    await run(gemini(fake_llm.url, model_id), ctx(user("think")), thinking_level=level)
    assert fake_llm.requests[0]["body"]["generationConfig"]["thinkingConfig"] == config


async def test_thinking_off_on_a_model_that_cannot_stop_thinking(fake_llm):
    model = gemini(fake_llm.url, "gemini-3-pro-preview", thinkingLevelMap={"off": None, "minimal": None})
    await run(model, ctx(user("hi")), thinking_level="off")
    assert fake_llm.requests[0]["body"]["generationConfig"]["thinkingConfig"] == {"thinkingLevel": "LOW"}


async def test_custom_budgets_and_non_reasoning_models(fake_llm):
    await run(gemini(fake_llm.url), ctx(user("a")), thinking_level="low", thinking_budgets={"low": 999})
    await run(gemini(fake_llm.url, reasoning=False), ctx(user("b")), thinking_level="high")
    assert fake_llm.requests[0]["body"]["generationConfig"]["thinkingConfig"]["thinkingBudget"] == 999
    assert "thinkingConfig" not in fake_llm.requests[1]["body"]["generationConfig"]


@pytest.mark.parametrize("status", [429, 400, 503])
async def test_http_error_text_is_the_json_body(fake_llm, status):
    fake_llm.add({"status": status})
    _, msg = await run(gemini(fake_llm.url), ctx(user("hi")))
    from tests.support.fakes.wire_google import render_error_body

    body = render_error_body({"status": status})["error"]
    expected = f'{{"error":{{"code":{status},"message":"{body["message"]}","status":"{body["status"]}"}}}}'
    assert msg["stopReason"] == "error" and msg["errorMessage"] == expected


async def test_error_object_inside_the_stream(fake_llm):
    fake_llm.add({"content": [{"type": "text", "text": "Hello there friend"}],
                  "streamError": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}})
    _, msg = await run(gemini(fake_llm.url), ctx(user("hi")))
    assert msg["errorMessage"] == ('got status: UNAVAILABLE. '
                                   '{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}')
    assert msg["content"] == [{"type": "text", "text": "Hello there friend"}]


async def test_safety_stop_is_an_error(fake_llm):
    fake_llm.add({"content": [{"type": "text", "text": "x"}], "rawStopReason": "SAFETY"})
    _, msg = await run(gemini(fake_llm.url), ctx(user("hi")))
    assert msg["stopReason"] == "error" and msg["errorMessage"] == "Provider stopped with: SAFETY"


async def test_max_tokens_is_length(fake_llm):
    fake_llm.add({"content": [{"type": "text", "text": "long"}], "stopReason": "length"})
    _, msg = await run(gemini(fake_llm.url), ctx(user("hi")))
    assert msg["stopReason"] == "length"




async def test_payload_hook_and_missing_key(fake_llm):
    async def on_payload(body: dict[str, Any]) -> dict[str, Any]:
        return {**body, "safetySettings": []}

    await run(gemini(fake_llm.url, headers={"x-extra": "1"}), ctx(user("hi")), on_payload=on_payload)
    assert fake_llm.requests[0]["body"]["safetySettings"] == []
    assert fake_llm.requests[0]["headers"]["x-extra"] == "1"
    _, msg = await run(gemini(fake_llm.url), ctx(user("hi")), api_key=None)
    assert msg["errorMessage"] == "No API key for provider: google" and len(fake_llm.requests) == 1


@pytest.mark.parametrize(("model_id", "nested"), [("gemini-3-flash-preview", True), ("gemini-2.5-flash", False)])
async def test_tool_result_images(fake_llm, model_id, nested):
    image = {"type": "image", "data": "aW1n", "mimeType": "image/png"}
    inline = {"inlineData": {"mimeType": "image/png", "data": "aW1n"}}
    call = {"role": "assistant", "api": "google-generative-ai", "provider": "google", "model": model_id,
            "stopReason": "toolUse", "timestamp": 2, "usage": empty_usage(),
            "content": [{"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "a.png"}}]}
    result = {"role": "toolResult", "toolCallId": "c1", "toolName": "read", "isError": False, "timestamp": 3,
              "content": [image]}
    await run(gemini(fake_llm.url, model_id), ctx(user("look"), call, result))
    contents = fake_llm.requests[0]["body"]["contents"]
    response = contents[2]["parts"][0]["functionResponse"]
    assert response["response"]["output"]  # a note stands in for the missing text
    if nested:
        assert response["parts"] == [inline] and len(contents) == 3
    else:
        assert "parts" not in response and contents[3]["parts"][1:] == [inline]
