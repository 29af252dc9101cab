"""The openai-responses adapter over real HTTP against the scripted fake server."""

import json

from pi_coding_agent.ai.errors import is_retryable_error
from pi_coding_agent.ai.stream import StreamOptions, stream
from pi_coding_agent.ai.types import Model

USER = {"role": "user", "content": "hi", "timestamp": 0}


def _model(url: str, **over) -> Model:
    model = {"id": "gpt-5-test", "name": "Test", "api": "openai-responses", "provider": "openai",
             "baseUrl": f"{url}/v1", "reasoning": True, "input": ["text"],
             "cost": {"input": 1.25, "output": 10, "cacheRead": 0.125, "cacheWrite": 0},
             "contextWindow": 400000, "maxTokens": 128000}
    model.update(over)
    return model  # type: ignore[return-value]


async def _run(model, context=None, **opts):
    s = stream(model, context or {"messages": [USER]}, StreamOptions(api_key="sk-test", **opts))
    events = [ev async for ev in s]
    return events, await s.result()


SCRIPT = {"content": [{"type": "thinking", "thinking": "Considering the listing.", "signature": "enc-123"},
                      {"type": "text", "text": "Let me look."},
                      {"type": "toolCall", "id": "call_7", "name": "bash", "arguments": {"command": "ls -la"}}],
          "usage": {"input": 200, "output": 30, "cacheRead": 800}, "chunkSize": 5}


async def test_reasoning_text_and_tool_call(fake_llm):
    fake_llm.add(SCRIPT)
    events, msg = await _run(_model(fake_llm.url), thinking_level="high")
    thinking, text, call = msg["content"]
    assert thinking["thinking"] == "Considering the listing."
    assert json.loads(thinking["thinkingSignature"]) == {
        "id": "rs_fake0", "type": "reasoning", "encrypted_content": "enc-123",
        "summary": [{"type": "summary_text", "text": "Considering the listing."}]}
    assert text == {"type": "text", "text": "Let me look.", "textSignature": '{"v":1,"id":"msg_fake1"}'}
    assert call == {"type": "toolCall", "id": "call_7|fc_fake2", "name": "bash", "arguments": {"command": "ls -la"}}
    assert msg["stopReason"] == "toolUse" and msg["responseId"] == "resp_fake0001"
    usage = msg["usage"]
    assert (usage["input"], usage["cacheRead"], usage["output"], usage["totalTokens"]) == (200, 800, 30, 1030)
    start = next(e for e in events if e["type"] == "toolcall_start")
    assert start == {"type": "toolcall_start", "contentIndex": 2, "id": "call_7|fc_fake2", "toolName": "bash"}
    assert json.loads("".join(e["delta"] for e in events if e["type"] == "toolcall_delta")) == {"command": "ls -la"}
    # each block ends before the next starts
    types = [e["type"] for e in events]
    assert types.index("thinking_end") < types.index("text_start") < types.index("text_end") < types.index(
        "toolcall_start")


async def test_request_body_and_replay(fake_llm):
    fake_llm.add(SCRIPT, {"content": [{"type": "text", "text": "Done."}]})
    _, first = await _run(_model(fake_llm.url), {"systemPrompt": "You are pi.", "messages": [USER],
                                                 "tools": [{"name": "bash", "description": "Run",
                                                            "parameters": {"type": "object"}}]},
                          thinking_level="high", session_id="sess-1")
    body = fake_llm.requests[0]["body"]
    assert body["input"] == [{"role": "developer", "content": "You are pi."},
                             {"role": "user", "content": [{"type": "input_text", "text": "hi"}]}]
    assert body["stream"] is True and body["store"] is False and body["max_output_tokens"] == 128000
    assert body["reasoning"] == {"effort": "high", "summary": "auto"}
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["prompt_cache_key"] == "sess-1"
    assert body["tools"] == [{"type": "function", "name": "bash", "description": "Run", "parameters": {"type": "object"}}]
    result = {"role": "toolResult", "toolCallId": first["content"][2]["id"], "toolName": "bash", "isError": False,
              "content": [{"type": "text", "text": "a.txt"}], "timestamp": 0}
    _, second = await _run(_model(fake_llm.url), {"messages": [USER, first, result]})
    replay = fake_llm.requests[1]["body"]["input"]
    assert replay[1] == json.loads(first["content"][0]["thinkingSignature"])
    assert replay[2] == {"type": "message", "role": "assistant", "status": "completed", "id": "msg_fake1",
                         "content": [{"type": "output_text", "text": "Let me look.", "annotations": []}]}
    assert replay[3] == {"type": "function_call", "id": "fc_fake2", "call_id": "call_7", "name": "bash",
                         "arguments": '{"command":"ls -la"}'}
    assert replay[4] == {"type": "function_call_output", "call_id": "call_7", "output": "a.txt"}
    assert fake_llm.requests[1]["body"]["reasoning"] == {"effort": "none"}  # thinking off on a reasoning model
    assert second["content"] == [{"type": "text", "text": "Done.", "textSignature": '{"v":1,"id":"msg_fake0"}'}]


async def test_foreign_tool_calls_are_renamed_consistently(fake_llm):
    other = {"role": "assistant", "api": "openai-completions", "provider": "groq", "model": "llama",
             "usage": {}, "stopReason": "toolUse", "timestamp": 0,
             "content": [{"type": "toolCall", "id": "call:1|item/x", "name": "bash", "arguments": {}}]}
    result = {"role": "toolResult", "toolCallId": "call:1|item/x", "toolName": "bash", "isError": False,
              "content": [{"type": "text", "text": "ok"}], "timestamp": 0}
    await _run(_model(fake_llm.url), {"messages": [USER, other, result]})
    call, output = fake_llm.requests[0]["body"]["input"][1:3]
    assert call["call_id"] == output["call_id"] == "call_1"
    assert call["id"].startswith("fc_")


async def test_length_stop_from_incomplete_response(fake_llm):
    fake_llm.add({"content": [{"type": "text", "text": "trunc"}], "stopReason": "length"})
    _, msg = await _run(_model(fake_llm.url))
    assert msg["stopReason"] == "length" and msg["content"][0]["text"] == "trunc"


async def test_http_error_uses_the_prefixed_form(fake_llm):
    fake_llm.add({"status": 529, "body": {"error": {"type": "overloaded_error", "message": "Overloaded"}}},
                 {"status": 500, "body": None})
    _, openai = await _run(_model(fake_llm.url))
    _, custom = await _run(_model(fake_llm.url, provider="fake"))
    assert openai["errorMessage"] == 'OpenAI API error (529): {"type":"overloaded_error","message":"Overloaded"}'
    assert custom["errorMessage"] == "fake API error (500): 500 status code (no body)"
    assert is_retryable_error(openai) and is_retryable_error(custom)


async def test_cut_stream_is_a_transient_error(fake_llm):
    fake_llm.add({**SCRIPT, "cutAfterChunks": 6})
    _, msg = await _run(_model(fake_llm.url))
    assert msg["stopReason"] == "error"
    assert msg["errorMessage"] == "terminated: other side closed (UND_ERR_SOCKET)"
    assert is_retryable_error(msg)
    assert msg["content"][0]["type"] == "thinking"


async def test_deltas_read_with_an_error_event_come_before_the_error(fake_llm):
    """One network read holds a message's start, two text deltas and an ``error`` event: the deltas
    still reach the consumer, in order, before the stream ends in the error."""
    def sse(data: dict) -> str:
        return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n"
    item = {"type": "message", "id": "msg_1", "role": "assistant", "status": "in_progress", "content": []}
    body = (sse({"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}})
            + sse({"type": "response.output_item.added", "output_index": 0, "item": item})
            + "".join(sse({"type": "response.output_text.delta", "output_index": 0, "item_id": "msg_1",
                           "content_index": 0, "delta": piece}) for piece in ("Hel", "lo"))
            + sse({"type": "error", "error": {"code": "server_error", "message": "upstream went away"}}))
    fake_llm.add({"raw": body, "contentType": "text/event-stream"})
    events, msg = await _run(_model(fake_llm.url))
    assert [e["type"] for e in events] == ["start", "text_start", "text_delta", "text_delta", "text_end", "error"]
    assert [e["delta"] for e in events if e["type"] == "text_delta"] == ["Hel", "lo"]
    assert msg["stopReason"] == "error" and "upstream went away" in msg["errorMessage"]
    assert msg["content"] == [{"type": "text", "text": "Hello"}]


async def test_a_lone_surrogate_in_a_text_delta_becomes_a_replacement_character(fake_llm):
    def sse(data: dict) -> str:
        return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n"
    item = {"type": "message", "id": "msg_1", "role": "assistant", "status": "in_progress", "content": []}
    done = {**item, "status": "completed", "content": [{"type": "output_text", "text": "half \ud83d"}]}
    body = (sse({"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}})
            + sse({"type": "response.output_item.added", "output_index": 0, "item": item})
            + sse({"type": "response.output_text.delta", "output_index": 0, "item_id": "msg_1",
                   "content_index": 0, "delta": "half \ud83d"})
            + sse({"type": "response.output_item.done", "output_index": 0, "item": done})
            + sse({"type": "response.completed", "response": {"id": "resp_1", "status": "completed",
                                                              "output": [done]}}))
    fake_llm.add({"raw": body, "contentType": "text/event-stream"})
    _, msg = await _run(_model(fake_llm.url))
    assert msg["stopReason"] == "stop", msg.get("errorMessage")
    assert msg["content"][0]["text"] == "half \ufffd"
