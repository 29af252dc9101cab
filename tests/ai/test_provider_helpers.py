"""Edge cases of the helpers adapters share (cut JSON, usage arithmetic, reasoning details, error texts)."""

from __future__ import annotations

from typing import Any

import orjson

from pi_coding_agent.ai.apis.openai_completions import build_request
from pi_coding_agent.ai.apis.openai_responses import stream_error_text
from pi_coding_agent.ai.apis.partial_json import repair_arguments
from pi_coding_agent.ai.apis.reasoning_details import merge_reasoning_details, replayed_reasoning_details
from pi_coding_agent.ai.apis.usage import chat_usage, output_with_reasoning
from pi_coding_agent.ai.stream import StreamOptions
from pi_coding_agent.ai.types import Model


def test_repair_tells_complete_from_repaired_arguments() -> None:
    assert repair_arguments('{"a": 1}') == ({"a": 1}, True)
    assert repair_arguments('{"path": "x.md", "content": "li') == ({"path": "x.md", "content": "li"}, False)
    assert repair_arguments('{"a": [1, 2,') == ({"a": [1, 2]}, False)
    assert repair_arguments("") == ({}, True)
    assert repair_arguments("[1, 2]") == ({}, False)  # not an object: nothing usable
    assert repair_arguments("garbage{") == ({}, False)


def test_reasoning_counted_only_when_outside_the_completion_count() -> None:
    assert output_with_reasoning(291, 26, 196, 513) == 222  # xAI: total = prompt + completion + reasoning
    assert output_with_reasoning(17, 118, 102, 135) == 118  # DeepSeek: already inside completion
    assert output_with_reasoning(10, 5, 3, None) == 5  # no total reported: trust the completion count
    usage = chat_usage({"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110,
                        "prompt_tokens_details": {"cached_tokens": 60, "cache_write_tokens": 30}})
    assert (usage["input"], usage["cacheRead"], usage["cacheWrite"], usage["totalTokens"]) == (10, 60, 30, 110)


def test_responses_error_texts_for_each_shape() -> None:
    nested = {"type": "error", "error": {"type": "tokens", "code": "rate_limit_exceeded", "message": "Slow down"}}
    assert stream_error_text(nested) == "rate_limit_exceeded: Slow down"
    assert stream_error_text({"type": "error", "error": {"code": None, "message": "Slow down"}}) == "Slow down"
    assert stream_error_text({"type": "error", "error": {"code": "server_error"}}) == '{"code":"server_error"}'
    top_level = {"type": "error", "code": "ERR_SOMETHING", "message": "Something went wrong", "param": None}
    assert stream_error_text(top_level) == "Error Code ERR_SOMETHING: Something went wrong"


def test_reasoning_details_merge_pieces_and_keep_encrypted_entries_whole() -> None:
    merged = merge_reasoning_details([], [{"type": "reasoning.text", "text": "a", "index": 0}])
    merged = merge_reasoning_details(merged, [{"type": "reasoning.text", "text": "b", "signature": "s"},
                                              {"type": "reasoning.encrypted", "data": "x"},
                                              {"type": "reasoning.encrypted", "data": "y"}])
    assert merged == [{"type": "reasoning.text", "text": "ab", "index": 0, "signature": "s"},
                      {"type": "reasoning.encrypted", "data": "x"}, {"type": "reasoning.encrypted", "data": "y"}]
    assert replayed_reasoning_details([{"type": "thinking", "thinking": "t", "thinkingSignature": "reasoning"}]) is None


def _model(**over: Any) -> Model:
    model: Any = {"id": "m", "name": "m", "api": "openai-completions", "provider": "openrouter",
                  "baseUrl": "http://127.0.0.1:9/api/v1", "reasoning": True, "input": ["text"],
                  "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
                  "contextWindow": 100000, "maxTokens": 4096, **over}
    return model


def test_reasoning_details_are_sent_back_instead_of_a_reasoning_field() -> None:
    details = [{"type": "reasoning.text", "text": "Two plus two", "format": "anthropic-claude-v1", "index": 0,
                "signature": "sig"}]
    assistant: Any = {"role": "assistant", "api": "openai-completions", "provider": "openrouter", "model": "m",
                      "stopReason": "stop", "timestamp": 2,
                      "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0},
                      "content": [{"type": "thinking", "thinking": "Two plus two",
                                   "thinkingSignature": orjson.dumps(details).decode()},
                                  {"type": "text", "text": "4"}]}
    context: Any = {"messages": [{"role": "user", "content": "hi", "timestamp": 1}, assistant,
                                 {"role": "user", "content": "sure?", "timestamp": 3}]}
    sent = build_request(_model(), context, StreamOptions())["messages"][1]
    assert sent == {"role": "assistant", "content": "4", "reasoning_details": details}


def test_output_cap_fits_the_context_window() -> None:
    context: Any = {"systemPrompt": "s" * 7000, "messages": [{"role": "user", "content": "hi", "timestamp": 1}]}
    body = build_request(_model(contextWindow=8000, maxTokens=8000), context, StreamOptions())
    assert body["max_completion_tokens"] == 8000 - (2000 + 1) - 4096  # 7002 characters / 3.5, then the margin
    assert build_request(_model(), context, StreamOptions(max_tokens=100))["max_completion_tokens"] == 100
