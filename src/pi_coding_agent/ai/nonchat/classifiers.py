"""Classifier models: one call answers typed questions (choice, score, bool) about JSON state.

``classify(model, context, options)`` dispatches on ``model["api"]`` and never raises: a failure is a
result with ``stopReason: "error"`` (or ``"aborted"``) and ``errorMessage``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

from pi_coding_agent.ai.nonchat.requests import abortable, error_result
from pi_coding_agent.ai.stream import StreamOptions
from pi_coding_agent.ai.types import JsonObject, Model

Classifier = Callable[[Model, JsonObject, StreamOptions], Awaitable[JsonObject]]


def _implementation(api: str) -> Classifier | None:
    """The module serving a classifier API, imported when first used."""
    if api == "typesafe-system-one":
        from pi_coding_agent.ai.nonchat.system_one import classify_typesafe

        return classify_typesafe
    if api == "cloudflare-workers-ai-system-one":
        from pi_coding_agent.ai.nonchat.system_one import classify_cloudflare

        return classify_cloudflare
    if api == "openai-decisions":
        from pi_coding_agent.ai.nonchat.openai_decisions import classify as classify_decisions

        return classify_decisions
    if api == "llama-cpp-classify":
        from pi_coding_agent.ai.nonchat.llama_classify import classify as classify_llama

        return classify_llama
    return None


def refusal(model: Model, context: Mapping[str, object]) -> str | None:
    """Why the call cannot be made at all (checked before credentials are looked up, as in pi)."""
    if model.get("type") != "classifier":
        return f"Model {model['provider']}/{model['id']} is not a classifier model"
    if context.get("images") and "image" not in model["input"]:
        return f"Model {model['provider']}/{model['id']} does not accept image input"
    return None


async def classify(model: Model, context: Mapping[str, object], options: StreamOptions) -> JsonObject:
    """Answer ``context["questions"]`` about ``context["state"]`` (and ``context["images"]``)."""
    problem = refusal(model, context)
    if problem is not None:
        return error_result(model, problem)
    run = _implementation(model["api"])
    if run is None:
        return error_result(model, f"Provider {model['provider']} has no classifier implementation for "
                                   f'"{model["api"]}" in this Python implementation of pi')
    return await abortable(run(model, dict(context), options), options,
                           lambda: error_result(model, "This operation was aborted", aborted=True))
