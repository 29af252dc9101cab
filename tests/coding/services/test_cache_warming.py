"""Prompt-cache warming: pi's policy numbers, and refreshes through the real ``pi --mode rpc``."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from pi_coding_agent.ai.models.catalog import builtin_models
from pi_coding_agent.coding.services.cache_warming import cache_ttl_s, evaluate, refresh_delay_s, replayable
from tests.support.cli_sides import needs_reference, rpc_turns
from tests.support.rpc_helpers import RpcProcess

SONNET = next(m for m in builtin_models("anthropic") if m["id"] == "claude-sonnet-4-5")


def test_refresh_timing_and_lifetimes() -> None:
    assert refresh_delay_s(300) == 270 and refresh_delay_s(3600) == 3240
    assert refresh_delay_s(11) == 1 and refresh_delay_s(10) is None
    assert cache_ttl_s(SONNET, "short") == 300 and cache_ttl_s(SONNET, "long") == 3600
    assert cache_ttl_s(SONNET, "none") is None


def test_economics_follow_the_phase() -> None:
    streaming = evaluate(SONNET, 100_000, "streaming")
    idle = evaluate(SONNET, 100_000, "idle")
    assert round(streaming.miss_cost, 6) == round((3.75 - 0.3) / 10, 6)  # a cache write instead of a read
    assert streaming.warm and idle.continuation_probability == 0.15
    assert not idle.warm  # 15% of a $0.345 miss does not pay for a $0.03 refresh
    assert evaluate(SONNET, 1_000_000, "idle").warm
    assert not evaluate(SONNET, 5_000, "streaming").warm  # too small to pay for itself
    assert not evaluate(SONNET, 0, "idle").economics_available


def test_budget_thinking_on_anthropic_is_not_replayable() -> None:
    assert replayable(SONNET, "off")
    assert not replayable(SONNET, "high")
    adaptive = next(m for m in builtin_models("anthropic") if (m.get("compat") or {}).get("forceAdaptiveThinking"))
    assert replayable(adaptive, "high")


def _workspace(tmp_path: Path, url: str, warming: str | None) -> tuple[Path, dict[str, str]]:
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "models.json").write_text(json.dumps({"providers": {"cachey": {
        "baseUrl": f"{url}/v1", "api": "openai-completions", "apiKey": "k",
        "models": [{"id": "c1", "contextWindow": 200000, "maxTokens": 4096, "promptCache": {"short": 11},
                    "cost": {"input": 100, "output": 100, "cacheRead": 1, "cacheWrite": 1000}}]}}}))
    if warming is not None:
        (agent / "settings.json").write_text(json.dumps({"cacheWarming": warming}))
    env = {**os.environ, "HOME": str(tmp_path), "PI_CODING_AGENT_DIR": str(agent)}
    env.pop("PI_CACHE_RETENTION", None)
    return agent, env


async def _prompt_and_wait(fake_llm: Any, tmp_path: Path, warming: str | None, wait_s: float) -> Path:
    agent, env = _workspace(tmp_path, fake_llm.url, warming)
    fake_llm.add({"content": [{"type": "text", "text": "cached answer"}], "usage": {"input": 20000, "output": 5}},
                 *[{"content": [{"type": "text", "text": "."}], "usage": {"cacheRead": 20000, "output": 1}}] * 5)
    pi = await RpcProcess.pi("--provider", "cachey", "--model", "c1", cwd=tmp_path, env=env)
    try:
        assert (await pi.request({"type": "prompt", "message": "hi"}))["success"] is True
        await pi.read_until(lambda r: r.get("type") == "agent_settled")
        await asyncio.sleep(wait_s)
    finally:
        await pi.kill()
    return agent


@pytest.mark.slow
async def test_idle_warming_replays_the_request_and_records_usage(fake_llm, tmp_path: Path) -> None:
    agent = await _prompt_and_wait(fake_llm, tmp_path, None, 3.5)
    assert len(fake_llm.requests) >= 2
    real, warm = fake_llm.requests[0]["body"], fake_llm.requests[1]["body"]
    assert warm["messages"] == real["messages"] and warm["max_completion_tokens"] == 1
    entries = [json.loads(line) for f in agent.rglob("*.jsonl") for line in f.read_text().splitlines()]
    usage = [e for e in entries if e["type"] == "usage"]
    assert usage and usage[0]["kind"] == "cache_warm" and usage[0]["provider"] == "cachey"
    assert usage[0]["model"] == "c1" and usage[0]["usage"]["cacheRead"] == 20000
    assert usage[0]["usage"]["cost"]["total"] > 0
    assert not any(e["type"] == "message" and e["message"].get("usage", {}).get("output") == 1 for e in entries)


@pytest.mark.slow
async def test_warming_off_sends_nothing_more(fake_llm, tmp_path: Path) -> None:
    await _prompt_and_wait(fake_llm, tmp_path, "off", 2.5)
    assert len(fake_llm.requests) == 1


def _warm_side(kind: str, home: Path, fake_llm: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One prompt, then idle long enough for refreshes: the requests sent and the session's usage entries."""
    agent, env = _workspace(home, fake_llm.url, None)
    fake_llm.add({"content": [{"type": "text", "text": "cached answer"}], "usage": {"input": 20000, "output": 5}},
                 *[{"content": [{"type": "text", "text": "."}], "usage": {"cacheRead": 20000, "output": 1}}] * 4)
    start = len(fake_llm.requests)
    rpc_turns(kind, ["--provider", "cachey", "--model", "c1"], env, home,
              [{"id": "1", "type": "prompt", "message": "hi"}], linger_s=2.5)
    entries = [json.loads(line) for f in agent.rglob("*.jsonl") for line in f.read_text().splitlines()]
    return fake_llm.requests[start:], [e for e in entries if e["type"] == "usage"]


@needs_reference
@pytest.mark.timeout(120)
def test_warm_requests_and_usage_entries_match_the_reference(fake_llm, tmp_path: Path) -> None:
    sides = {}
    for kind in ("ours", "reference"):
        (tmp_path / kind).mkdir()
        sides[kind] = _warm_side(kind, tmp_path / kind, fake_llm)
    (our_requests, our_usage), (ref_requests, ref_usage) = sides["ours"], sides["reference"]
    assert len(our_requests) >= 2 and len(ref_requests) >= 2
    assert our_requests[1]["body"]["max_completion_tokens"] == ref_requests[1]["body"]["max_completion_tokens"] == 1
    assert {k for k in our_requests[1]["body"] if k != "messages"} == {k for k in ref_requests[1]["body"]
                                                                         if k != "messages"}
    volatile = ("id", "parentId", "timestamp")
    assert our_usage and ref_usage
    assert [{k: v for k, v in e.items() if k not in volatile} for e in our_usage[:1]] == [
        {k: v for k, v in e.items() if k not in volatile} for e in ref_usage[:1]]
