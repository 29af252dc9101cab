"""models.json ``samplingParams`` and ``samplingParamsByThinkingLevel``, merged as pi merges them.

The model's parameters, then those of the effective thinking level (the requested level clamped to
what the model supports), are written over the request body last, so they win over named fields
such as ``temperature``. Used by every OpenAI-style adapter.
"""

from __future__ import annotations

from typing import Any

from pi_coding_agent.ai.thinking import clamp_thinking_level
from pi_coding_agent.ai.types import JsonObject, Model


def sampling_params(model: Model, thinking_level: str) -> JsonObject:
    """The extra body fields for a request at ``thinking_level`` (empty when none are configured)."""
    by_level: Any = model.get("samplingParamsByThinkingLevel") or {}
    level_params = by_level.get(clamp_thinking_level(model, thinking_level)) or {}
    return {**(model.get("samplingParams") or {}), **level_params}
