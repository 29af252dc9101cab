"""Virtual models: selectable catalog entries that a router maps to a physical model per request.

The catalog only lists them (``ModelRegistry.register_virtual_model``); the routing itself belongs
to the coding layer, which knows why each request is made. An entry's ``api`` is ``pi-virtual``:
no adapter serves it, so a request that was not routed first fails.
"""

from __future__ import annotations

from collections.abc import Sequence

from pi_coding_agent.ai.types import THINKING_LEVELS, Model

VIRTUAL_API = "pi-virtual"
STATE_ENTRY = "pi.virtual-model-state"  # the custom entry that keeps a router's state on the branch


def is_virtual(model: Model) -> bool:
    return model["api"] == VIRTUAL_API


def virtual_entry(provider: str, model_id: str, name: str, thinking_levels: Sequence[str] | None = None,
                  context_window: int | None = None, max_tokens: int | None = None,
                  input_types: Sequence[str] | None = None) -> Model:
    """The catalog entry pi lists for a virtual model: its offered levels map to themselves, the
    others to null; unset limits are 0 (unknown)."""
    levels = list(thinking_levels or ["off"])
    return {
        "id": model_id, "name": name, "api": VIRTUAL_API, "provider": provider, "baseUrl": "",
        "reasoning": any(level != "off" for level in levels),
        "thinkingLevelMap": {level: (level if level in levels else None) for level in THINKING_LEVELS},
        "input": list(input_types or ["text", "image"]),
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": context_window or 0, "maxTokens": max_tokens or 0,
    }
