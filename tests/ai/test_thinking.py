"""Thinking levels, budgets and the output cap."""

import pytest

from pi_coding_agent.ai.thinking import (
    clamp_max_tokens,
    clamp_thinking_level,
    estimate_context_tokens,
    supported_thinking_levels,
    thinking_budget,
)
from pi_coding_agent.ai.types import Model


def model(reasoning: bool = True, level_map: dict | None = None, window: int = 200000, max_tokens: int = 64000) -> Model:
    m: Model = {
        "id": "m", "name": "m", "api": "faux", "provider": "faux", "baseUrl": "", "reasoning": reasoning,
        "input": ["text"], "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": window, "maxTokens": max_tokens,
    }
    if level_map is not None:
        m["thinkingLevelMap"] = level_map
    return m


PLAIN = model()
NO_REASONING = model(reasoning=False)
MAX_ONLY = model(level_map={"max": "max"})
ADAPTIVE = model(level_map={"off": None, "minimal": None, "xhigh": "xhigh", "max": "max"})
SPARSE = model(level_map={"minimal": None, "low": None, "medium": None, "high": "high", "max": "max"})


def test_supported_levels():
    assert supported_thinking_levels(NO_REASONING) == ["off"]
    assert supported_thinking_levels(PLAIN) == ["off", "minimal", "low", "medium", "high"]
    assert supported_thinking_levels(MAX_ONLY) == ["off", "minimal", "low", "medium", "high", "max"]
    assert supported_thinking_levels(ADAPTIVE) == ["low", "medium", "high", "xhigh", "max"]


@pytest.mark.parametrize(("m", "requested", "expected"), [
    (PLAIN, "medium", "medium"),
    (PLAIN, "xhigh", "high"),          # nothing above: search downwards
    (PLAIN, "bogus", "off"),           # unknown -> first supported
    (NO_REASONING, "high", "off"),
    (MAX_ONLY, "xhigh", "max"),        # upwards first
    (ADAPTIVE, "off", "low"),
    (ADAPTIVE, "minimal", "low"),
    (ADAPTIVE, "bogus", "low"),
    (SPARSE, "low", "high"),
    (SPARSE, "xhigh", "max"),
])
def test_clamp_table(m, requested, expected):
    assert clamp_thinking_level(m, requested) == expected


def test_budgets():
    assert [thinking_budget(level, None) for level in ("off", "minimal", "low", "medium", "high", "xhigh", "max")] == [
        0, 1024, 2048, 8192, 16384, 16384, 16384]
    assert thinking_budget("medium", {"medium": 4000}) == 4000
    assert thinking_budget("max", {"high": 30000}) == 30000


def user(text: str, ts: int = 0) -> dict:
    return {"role": "user", "content": text, "timestamp": ts}


def test_output_cap_keeps_requested_when_room():
    assert clamp_max_tokens(model(), {"messages": [user("hi")]}, None) == 64000
    assert clamp_max_tokens(model(), {"messages": [user("hi")]}, 1000) == 1000


def test_output_cap_with_ratio_margin():
    # 35000 chars = 10000 tokens; margin = max(4096, 1500) = 4096; room = 100000 - 14096 = 85904.
    m = model(window=100000, max_tokens=100000)
    assert clamp_max_tokens(m, {"messages": [user("x" * 35000)]}, None) == 85904
    # 350000 chars = 100000 tokens; margin 15000; room = 200000-115000 = 85000.
    m = model(window=200000, max_tokens=200000)
    assert clamp_max_tokens(m, {"messages": [user("x" * 350000)]}, None) == 85000


def test_output_cap_small_room_uses_fixed_margin():
    # 28000 tokens in a 32768 window: room below 32768 -> min(32768, 32768 - 28000 - 4096) = 672.
    m = model(window=32768, max_tokens=32768)
    assert clamp_max_tokens(m, {"messages": [user("x" * 98000)]}, None) == 672
    assert clamp_max_tokens(m, {"messages": [user("x" * 200000)]}, None) == 1  # never below 1


def test_estimate_counts_system_prompt_and_tools_only_before_a_usage():
    usage = {"input": 500, "output": 100, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 600,
             "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}
    reply = {"role": "assistant", "content": [{"type": "text", "text": "ok"}], "api": "faux", "provider": "faux",
             "model": "m", "usage": usage, "stopReason": "stop", "timestamp": 2}
    messages = [user("x" * 7000, 1), reply, user("y" * 35, 3)]
    assert estimate_context_tokens({"messages": messages}) == 600 + 10
    # the reported usage already holds the system prompt and the tools (pi's leading system message)
    assert estimate_context_tokens({"messages": messages, "systemPrompt": "s" * 7}) == 610
    assert estimate_context_tokens({"messages": messages[:1], "systemPrompt": "s" * 7}) == 2000 + 2
    patch = {"role": "system", "content": "", "timestamp": 4, "toolsAdded": [{"name": "t"}]}
    assert estimate_context_tokens({"messages": [*messages, patch]}) == 610 + 4  # '[{"name":"t"}]' / 3.5
    aborted = {**reply, "stopReason": "aborted"}
    assert estimate_context_tokens({"messages": [user("x" * 7000, 1), aborted]}) == 2000 + 1
