"""Token arithmetic of the OpenAI-style usage objects, shared by every adapter that reads one.

Hosts disagree on what their counts include; each rule here is written against a recorded answer:

* cached (read) and cache-write tokens are part of ``prompt_tokens``/``input_tokens``, so fresh
  input is what is left after subtracting both (never below zero);
* reasoning tokens are normally part of ``completion_tokens``, but some hosts (xAI) report them
  beside it: when ``prompt + completion`` falls short of ``total_tokens`` by the reasoning count
  (or more), they were left out and are added to the output, so cost covers what was billed.
"""

from __future__ import annotations

from typing import Any

from pi_coding_agent.ai.types import Model, Usage, empty_usage


def build_usage(fresh: int, output: int, cached: int, written: int, reasoning: int) -> Usage:
    """A usage record in pi's key order (reasoning sits between the counts and the total)."""
    usage = empty_usage()
    return {"input": fresh, "output": output, "cacheRead": cached, "cacheWrite": written,
            "reasoning": reasoning, "totalTokens": fresh + output + cached + written, "cost": usage["cost"]}


def output_with_reasoning(prompt: int, completion: int, reasoning: int, total: int | None) -> int:
    """Output tokens, adding reasoning tokens a host reported outside its completion count."""
    if reasoning and total and prompt + completion + reasoning <= total:
        return completion + reasoning
    return completion


def chat_usage(raw: dict[str, Any]) -> Usage:
    """Chat Completions ``usage`` (OpenAI, OpenRouter, DeepSeek, Kimi, xAI, Groq, llama.cpp...)."""
    details = raw.get("prompt_tokens_details") or {}
    cached = details.get("cached_tokens") or raw.get("prompt_cache_hit_tokens") or raw.get("cached_tokens") or 0
    written = details.get("cache_write_tokens") or 0
    prompt = raw.get("prompt_tokens") or 0
    reasoning = (raw.get("completion_tokens_details") or {}).get("reasoning_tokens") or raw.get("reasoning_tokens") or 0
    output = output_with_reasoning(prompt, raw.get("completion_tokens") or 0, reasoning, raw.get("total_tokens"))
    return build_usage(max(0, prompt - cached - written), output, cached, written, reasoning)


def responses_usage(raw: dict[str, Any]) -> Usage:
    """Responses API ``response.usage``; the reported total is kept as pi keeps it."""
    details = raw.get("input_tokens_details") or {}
    cached = details.get("cached_tokens") or 0
    written = details.get("cache_write_tokens") or 0
    prompt = raw.get("input_tokens") or 0
    reasoning = (raw.get("output_tokens_details") or {}).get("reasoning_tokens") or 0
    output = output_with_reasoning(prompt, raw.get("output_tokens") or 0, reasoning, raw.get("total_tokens"))
    usage = build_usage(max(0, prompt - cached - written), output, cached, written, reasoning)
    usage["totalTokens"] = raw.get("total_tokens") or 0
    return usage


def is_openrouter(model: Model) -> bool:
    return model["provider"] == "openrouter" or "openrouter.ai" in model["baseUrl"]


def apply_reported_cost(usage: Usage, raw: dict[str, Any]) -> None:
    """Keep OpenRouter's billed total (``cost``, plus the upstream cost for BYOK keys) when it is complete.

    The stream wrapper still prices each component from the catalog but leaves this total, flagged
    ``totalFromProvider: true``, as pi does.
    """
    def valid(value: object) -> bool:
        return isinstance(value, int | float) and not isinstance(value, bool) and value >= 0

    billed: Any = raw.get("cost")
    if not valid(billed):
        return
    total: float = billed
    if raw.get("is_byok") is True:
        details = raw.get("cost_details") or {}
        upstream: object = details.get("upstream_inference_cost")
        if upstream is None and valid(details.get("upstream_inference_prompt_cost")) \
                and valid(details.get("upstream_inference_completions_cost")):
            upstream = details["upstream_inference_prompt_cost"] + details["upstream_inference_completions_cost"]
        if not valid(upstream):
            return
        total = billed + upstream
    elif raw.get("is_byok") is not False:
        return
    usage["cost"]["total"] = total
    usage["cost"]["totalFromProvider"] = True
