"""Cost of one response from the model's price table (USD per million tokens)."""

from __future__ import annotations

from typing import Any

from pi_coding_agent.ai.types import JsonObject, Model, Usage


def _rates(model: Model, usage: Usage) -> Any:
    """Base rates, or the highest tier whose ``inputTokensAbove`` is below the prompt size."""
    cost: Any = model["cost"]
    tiers = cost.get("tiers")
    if not tiers:
        return cost
    prompt = usage["input"] + usage["cacheRead"] + usage["cacheWrite"]
    best = None
    for tier in tiers:
        above = tier.get("inputTokensAbove", 0)
        if above < prompt and (best is None or above > best.get("inputTokensAbove", 0)):
            best = tier
    return {**cost, **best} if best else cost


def apply_cost(model: Model, usage: Usage, reported: bool) -> None:
    """Fill ``usage["cost"]`` in place (pi-ai's calculateCost).

    ``reported``: the provider sent a usage report, so the cost is our computation from it
    (``totalFromProvider: false``); without one pi leaves the flag out.
    """
    c: Any = usage["cost"]
    billed = c["total"] if c.get("totalFromProvider") is True else None  # a provider's own total wins
    rate = _rates(model, usage)
    write_1h: int = usage.get("cacheWrite1h", 0)
    c["input"] = rate.get("input", 0) / 1e6 * usage["input"]
    c["output"] = rate.get("output", 0) / 1e6 * usage["output"]
    c["cacheRead"] = rate.get("cacheRead", 0) / 1e6 * usage["cacheRead"]
    c["cacheWrite"] = (
        rate.get("cacheWrite", 0) * (usage["cacheWrite"] - write_1h) + 2 * rate.get("input", 0) * write_1h
    ) / 1e6
    c["total"] = c["input"] + c["output"] + c["cacheRead"] + c["cacheWrite"]
    for key in ("input", "output", "cacheRead", "cacheWrite", "total"):
        if c[key] == int(c[key]):
            c[key] = int(c[key])  # JSON.stringify writes 0, not 0.0
    if billed is not None:
        c["total"] = billed
    elif reported:
        c["totalFromProvider"] = False


def combine_usage(first: dict[str, Any] | None, second: dict[str, Any]) -> JsonObject:
    """Token counts and costs of two requests added up."""
    if first is None:
        return second
    combined: JsonObject = {}
    for key in ("input", "output", "cacheRead", "cacheWrite", "cacheWrite1h", "reasoning", "totalTokens"):
        if key in first or key in second:
            combined[key] = (first.get(key) or 0) + (second.get(key) or 0)
    cost_a, cost_b = first.get("cost") or {}, second.get("cost") or {}
    cost = {key: (cost_a.get(key) or 0) + (cost_b.get(key) or 0)
            for key in ("input", "output", "cacheRead", "cacheWrite", "total")}
    if "totalFromProvider" in cost_a or "totalFromProvider" in cost_b:
        cost["totalFromProvider"] = bool(cost_a.get("totalFromProvider") and cost_b.get("totalFromProvider"))
    combined["cost"] = cost
    return combined
