"""The openai-completions adapter over real HTTP against the scripted fake server."""

import json

from pi_coding_agent.ai.errors import is_context_overflow, is_retryable_error
from pi_coding_agent.ai.stream import StreamOptions, stream
from pi_coding_agent.ai.types import Model

USER = {"role": "user", "content": "hi", "timestamp": 0}


def _model(url: str, **over) -> Model:
    model = {"id": "gpt-test", "name": "Test", "api": "openai-completions", "provider": "openai",
             "baseUrl": f"{url}/v1", "reasoning": False, "input": ["text"],
             "cost": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 0},
             "contextWindow": 100000, "maxTokens": 8000}
    model.update(over)
    return model  # type: ignore[return-value]


def _opts(**kw) -> StreamOptions:
    return StreamOptions(api_key="sk-test", **kw)


async def _run(model, context=None, options=None):
    s = stream(model, context or {"messages": [USER]}, options or _opts())
    events = [ev async for ev in s]
    return events, await s.result()


async def test_text_reply(fake_llm):
    fake_llm.add({"content": [{"type": "text", "text": "Hello there, how can I help?"}],
                  "usage": {"input": 100, "output": 20}})
    events, msg = await _run(_model(fake_llm.url))
    types = [e["type"] for e in events]
    assert types[:2] == ["start", "text_start"] and types[-2:] == ["text_end", "done"]
    assert "".join(e["delta"] for e in events if e["type"] == "text_delta") == "Hello there, how can I help?"
    assert msg["content"] == [{"type": "text", "text": "Hello there, how can I help?"}]
    assert msg["stopReason"] == "stop" and msg["responseId"] == "chatcmpl-fake0001"
    assert msg["usage"]["input"] == 100 and msg["usage"]["output"] == 20 and msg["usage"]["totalTokens"] == 120
    assert abs(msg["usage"]["cost"]["total"] - 0.0006) < 1e-12
    assert fake_llm.requests[0]["headers"]["authorization"] == "Bearer sk-test"


async def test_thinking_precedes_text_and_records_its_field(fake_llm):
    fake_llm.add({"content": [{"type": "thinking", "thinking": "Let me think about it."},
                              {"type": "text", "text": "Answer."}]})
    events, msg = await _run(_model(fake_llm.url, reasoning=True))
    assert msg["content"][0] == {"type": "thinking", "thinking": "Let me think about it.",
                                 "thinkingSignature": "reasoning_content"}
    assert msg["content"][1] == {"type": "text", "text": "Answer."}
    # all *_end events come when the stream ends, in block order
    ends = [e["type"] for e in events if e["type"].endswith("_end")]
    assert ends == ["thinking_end", "text_end"]
    assert [e["type"] for e in events].index("text_start") < [e["type"] for e in events].index("thinking_end")



async def test_two_parallel_tool_calls(fake_llm):
    fake_llm.add({"content": [{"type": "text", "text": "Running both."},
                              {"type": "toolCall", "id": "call_a", "name": "bash", "arguments": {"command": "ls"}},
                              {"type": "toolCall", "id": "call_b", "name": "read", "arguments": {"path": "a.txt"}}]})
    _, msg = await _run(_model(fake_llm.url))
    calls = [b for b in msg["content"] if b["type"] == "toolCall"]
    assert [(c["id"], c["name"], c["arguments"]) for c in calls] == [
        ("call_a", "bash", {"command": "ls"}), ("call_b", "read", {"path": "a.txt"})]
    assert msg["stopReason"] == "toolUse"


async def test_usage_with_cached_tokens(fake_llm):
    fake_llm.add({"content": [{"type": "text", "text": "ok"}], "usage": {"input": 1000, "output": 50, "cacheRead": 4000}})
    _, msg = await _run(_model(fake_llm.url))
    usage = msg["usage"]
    assert (usage["input"], usage["cacheRead"], usage["output"], usage["totalTokens"]) == (1000, 4000, 50, 5050)
    assert abs(usage["cost"]["cacheRead"] - 4000 * 0.3 / 1e6) < 1e-12


async def test_length_stop(fake_llm):
    fake_llm.add({"content": [{"type": "text", "text": "cut"}], "stopReason": "length"})
    _, msg = await _run(_model(fake_llm.url))
    assert msg["stopReason"] == "length"


async def test_content_filter_finish_reason_is_an_error(fake_llm):
    fake_llm.add({"content": [{"type": "text", "text": "partial"}], "rawFinishReason": "content_filter"})
    _, msg = await _run(_model(fake_llm.url))
    assert msg["stopReason"] == "error"
    assert msg["errorMessage"] == "Provider finish_reason: content_filter"
    assert msg["content"] == [{"type": "text", "text": "partial"}]


async def test_http_529_uses_pis_error_form(fake_llm):
    fake_llm.add({"status": 529, "body": {"error": {"type": "overloaded_error", "message": "Overloaded"}}})
    events, msg = await _run(_model(fake_llm.url))
    assert [e["type"] for e in events] == ["start", "error"]
    assert msg["stopReason"] == "error" and msg["content"] == []
    assert msg["errorMessage"] == '529: {"type":"overloaded_error","message":"Overloaded"}'
    assert is_retryable_error(msg)


async def test_http_500_default_openai_body(fake_llm):
    fake_llm.add({"status": 500})
    _, msg = await _run(_model(fake_llm.url))
    assert msg["errorMessage"] == (
        '500: {"message":"The server had an error while processing your request. Sorry about that!",'
        '"type":"server_error","param":null,"code":null}')
    assert is_retryable_error(msg)


async def test_http_429_with_short_retry_after(fake_llm):
    fake_llm.add({"status": 429, "headers": {"retry-after": "1"}})
    _, msg = await _run(_model(fake_llm.url))
    assert msg["errorMessage"].startswith('429: {"message":"Rate limit reached')
    assert "retry delay" not in msg["errorMessage"]
    assert is_retryable_error(msg)


async def test_long_retry_after_keeps_the_plain_error_text(fake_llm):
    # pi 1.6.0 (provider-level retries off by default) reports the plain 429; the agent retries it
    fake_llm.add({"status": 429, "headers": {"retry-after-ms": "120000"}})
    stream_ = stream(_model(fake_llm.url), {"messages": [{"role": "user", "content": "hi", "timestamp": 0}]},
                     _opts())
    msg = await stream_.result()
    assert msg["errorMessage"].startswith("429: ")
    assert stream_.retry_after_ms == 120000
    assert is_retryable_error(msg)


async def test_quota_error_is_not_retryable(fake_llm):
    fake_llm.add({"status": 429, "body": {"error": {"message": "You exceeded your current quota.",
                                                    "type": "insufficient_quota", "code": "insufficient_quota"}}})
    _, msg = await _run(_model(fake_llm.url))
    assert msg["stopReason"] == "error" and not is_retryable_error(msg)


async def test_context_overflow_body(fake_llm):
    fake_llm.add({"status": 400})  # OpenAI's context_length_exceeded body
    _, msg = await _run(_model(fake_llm.url))
    assert msg["errorMessage"].startswith('400: {"message":"This model\'s maximum context length is 128000 tokens.')
    assert is_context_overflow(msg, 128000) and not is_retryable_error(msg)


async def test_bodiless_400_from_cerebras_is_overflow(fake_llm):
    fake_llm.add({"status": 400, "body": None})
    _, msg = await _run(_model(fake_llm.url, provider="cerebras"))
    assert msg["errorMessage"] == "400 status code (no body)"
    assert is_context_overflow(msg, 100000)




async def test_missing_api_key(fake_llm):
    _, msg = await _run(_model(fake_llm.url), options=StreamOptions())
    assert msg["errorMessage"] == "No API key for provider: openai"
    assert fake_llm.requests == []


# ------------------------------------------------------------------------------------------ request body


async def _body(fake_llm, model, context=None, **opts):
    await _run(model, context, _opts(**opts))
    return fake_llm.requests[-1]["body"]


async def test_request_for_openai_reasoning_model(fake_llm):
    model = _model(fake_llm.url, reasoning=True, thinkingLevelMap={"minimal": "low"})
    context = {"systemPrompt": "You are pi.", "messages": [USER],
               "tools": [{"name": "bash", "description": "Run a command",
                          "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}]}
    body = await _body(fake_llm, model, context, thinking_level="minimal", max_tokens=4096)
    assert body["model"] == "gpt-test" and body["stream"] is True
    assert body["stream_options"] == {"include_usage": True} and body["store"] is False
    assert body["max_completion_tokens"] == 4096 and "max_tokens" not in body
    assert body["reasoning_effort"] == "low"
    assert body["messages"] == [{"role": "developer", "content": "You are pi."}, {"role": "user", "content": "hi"}]
    assert body["tools"] == [{"type": "function", "function": {
        "name": "bash", "description": "Run a command",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}}]


async def test_request_thinking_off_sends_no_effort(fake_llm):
    body = await _body(fake_llm, _model(fake_llm.url, reasoning=True), thinking_level="off")
    assert "reasoning_effort" not in body


async def test_request_for_other_hosts(fake_llm):
    groq = await _body(fake_llm, _model(fake_llm.url, provider="groq", reasoning=True),
                       {"systemPrompt": "sys", "messages": [USER]}, thinking_level="high")
    assert groq["messages"][0] == {"role": "system", "content": "sys"}
    assert groq["reasoning_effort"] == "high" and groq["max_completion_tokens"] == 8000
    deepseek = await _body(fake_llm, _model(fake_llm.url, provider="deepseek", reasoning=True), thinking_level="high")
    assert "store" not in deepseek and deepseek["max_tokens"] == 8000
    assert deepseek["thinking"] == {"type": "enabled"} and deepseek["reasoning_effort"] == "high"
    openrouter = await _body(fake_llm, _model(fake_llm.url, provider="openrouter", reasoning=True))
    assert openrouter["reasoning"] == {"effort": "none"} and "reasoning_effort" not in openrouter
    local = await _body(fake_llm, _model(fake_llm.url, provider="ollama",
                                         compat={"maxTokensField": "max_tokens", "supportsStore": False}))
    assert local["max_tokens"] == 8000 and "store" not in local


async def test_request_replays_tools_history_and_fills_missing_results(fake_llm):
    model = _model(fake_llm.url)
    assistant = {"role": "assistant", "api": "openai-completions", "provider": "openai", "model": "gpt-test",
                 "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0},
                 "stopReason": "toolUse", "timestamp": 0,
                 "content": [{"type": "text", "text": "Checking."},
                             {"type": "toolCall", "id": "call_a", "name": "bash", "arguments": {"command": "ls"}},
                             {"type": "toolCall", "id": "call_b", "name": "bash", "arguments": {"command": "pwd"}}]}
    result = {"role": "toolResult", "toolCallId": "call_a", "toolName": "bash", "isError": False, "timestamp": 0,
              "content": [{"type": "text", "text": "a.txt"}]}
    failed = {**assistant, "stopReason": "error", "content": [{"type": "text", "text": "broken"}]}
    messages = [USER, assistant, result, failed, {"role": "user", "content": "next", "timestamp": 0}]
    body = await _body(fake_llm, model, {"messages": messages})
    assert body["messages"] == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "Checking.", "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "bash", "arguments": '{"command":"ls"}'}},
            {"id": "call_b", "type": "function", "function": {"name": "bash", "arguments": '{"command":"pwd"}'}}]},
        {"role": "tool", "content": "a.txt", "tool_call_id": "call_a"},
        {"role": "tool", "content": "No result provided", "tool_call_id": "call_b"},
        {"role": "user", "content": "next"},
    ]
    assert len(messages) == 5 and messages[1]["content"][0] == {"type": "text", "text": "Checking."}


async def test_on_payload_replaces_the_body_and_headers_merge(fake_llm):
    async def hook(body):
        return {**body, "metadata": {"tag": "x"}}

    model = _model(fake_llm.url, headers={"X-Model": "m", "X-Both": "model"})
    await _run(model, options=_opts(on_payload=hook, headers={"X-Both": "options"}))
    request = fake_llm.requests[-1]
    assert request["body"]["metadata"] == {"tag": "x"}
    assert request["headers"]["x-model"] == "m" and request["headers"]["x-both"] == "options"


async def test_plain_text_and_bodyless_json_errors(fake_llm):
    fake_llm.add({"status": 502, "body": "Bad gateway"}, {"status": 503, "body": {"detail": "busy"}})
    _, text = await _run(_model(fake_llm.url))
    _, detail = await _run(_model(fake_llm.url))
    assert text["errorMessage"] == "502 Bad gateway"
    assert detail["errorMessage"] == '503 {"detail":"busy"}'
    assert is_retryable_error(text) and is_retryable_error(detail)


def test_a_provider_authorization_header_replaces_the_adapters_whatever_its_case():
    """models.json ``authHeader: true`` adds ``Authorization``; the request carries one such header."""
    from pi_coding_agent.ai.apis.openai_completions import request_headers
    from pi_coding_agent.ai.stream import StreamOptions

    model = {"provider": "local", "id": "m", "headers": {"X-Team": "a"}}
    headers = request_headers(model, StreamOptions(api_key="k", headers={"Authorization": "Bearer k"}))  # type: ignore[arg-type]
    assert [name for name in headers if name.lower() == "authorization"] == ["Authorization"]
    assert headers["X-Team"] == "a"


async def test_deltas_read_with_a_failing_chunk_come_before_the_error(fake_llm):
    """One network read holds two text deltas and a gateway's error chunk: the deltas still reach
    the consumer, in order, before the stream ends in the error (as they would one read apiece)."""
    def chunk(delta: dict) -> str:
        return "data: " + json.dumps({"id": "c1", "object": "chat.completion.chunk", "model": "gpt-test",
                                      "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}) + "\n\n"
    body = chunk({"role": "assistant", "content": "Hel"}) + chunk({"content": "lo"}) + \
        'data: {"error": {"message": "upstream went away"}}\n\n'
    fake_llm.add({"raw": body, "contentType": "text/event-stream"})
    events, msg = await _run(_model(fake_llm.url))
    assert [e["type"] for e in events] == ["start", "text_start", "text_delta", "text_delta", "text_end", "error"]
    assert [e["delta"] for e in events if e["type"] == "text_delta"] == ["Hel", "lo"]
    assert msg["stopReason"] == "error" and msg["errorMessage"] == "upstream went away"
    assert msg["content"] == [{"type": "text", "text": "Hello"}]


def _chunks(*deltas: dict, finish: str = "stop") -> str:
    """A Chat Completions SSE body: one chunk per delta, then the finish reason (json.dumps writes a
    lone surrogate as the ``\\ud83d`` escape, as a buggy or cut-off upstream does)."""
    def chunk(delta: dict, reason: str | None = None) -> str:
        return "data: " + json.dumps({"id": "c1", "object": "chat.completion.chunk", "model": "gpt-test",
                                      "choices": [{"index": 0, "delta": delta, "finish_reason": reason}]}) + "\n\n"
    return "".join(chunk(d) for d in deltas) + chunk({}, finish) + "data: [DONE]\n\n"


def _call(index: int, call_id: str, args: str, name: str | None = "read") -> dict:
    function = {"arguments": args} if name is None else {"name": name, "arguments": args}
    return {"tool_calls": [{"index": index, "id": call_id, "type": "function", "function": function}]}


async def test_tool_calls_with_empty_or_equal_ids_keep_their_own_arguments(fake_llm):
    """Two calls that start as equal blocks (empty ids, or the same id) are told apart by position:
    each keeps its arguments (the second's went to the first when blocks were found by equality)."""
    for call_id in ("", "call_same"):
        fake_llm.add({"raw": _chunks(_call(0, call_id, ""), _call(1, call_id, ""),
                                     _call(0, call_id, '{"path": "a.txt"}', None),
                                     _call(1, call_id, '{"path": "b.txt"}', None), finish="tool_calls"),
                      "contentType": "text/event-stream"})
        events, msg = await _run(_model(fake_llm.url))
        assert [b["arguments"] for b in msg["content"]] == [{"path": "a.txt"}, {"path": "b.txt"}]
        assert [e["contentIndex"] for e in events if e["type"] == "toolcall_delta"] == [0, 1, 0, 1]


async def test_lone_surrogates_become_replacement_characters(fake_llm):
    """A lone surrogate escape in a text, thinking or tool-argument delta is U+FFFD, not a failed
    reply (orjson refuses it; pi's JSON.parse keeps it)."""
    fake_llm.add({"raw": _chunks({"reasoning_content": "think \ud83d"}, {"content": "smile \ud83d!"},
                                 {"content": " pair \ud83d\ude00"},
                                 _call(0, "call_1", json.dumps({"q": "x\udc00y"})), finish="tool_calls"),
                  "contentType": "text/event-stream"})
    events, msg = await _run(_model(fake_llm.url, reasoning=True))
    assert msg["stopReason"] == "toolUse", msg.get("errorMessage")
    assert msg["content"][0]["thinking"] == "think \ufffd"
    assert msg["content"][1]["text"] == "smile \ufffd! pair \U0001f600"
    assert msg["content"][2]["arguments"] == {"q": "x\ufffdy"}
    assert [e["delta"] for e in events if e["type"] == "text_delta"] == ["smile \ufffd!", " pair \U0001f600"]
