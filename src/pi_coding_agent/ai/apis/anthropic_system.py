"""Later system messages on the Anthropic Messages API (``compat.supportsMidConvoSystemMessages``).

Each is sent as a ``system`` message held back until just before the next assistant message that
is sent (or the end), since a ``tool_result`` must follow its ``tool_use`` directly. With
``compat.supportsMidConvoToolChanges`` too (and tools in the leading prompt), the request's tool list
stays the leading prompt's plus a deferred placeholder, and later changes travel inside those
messages as ``tool_removal``/``tool_addition`` blocks, so the cached prefix survives them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pi_coding_agent.ai.types import Context, JsonObject, Model, Tool

INLINE_TOOLS_BETA = "inline-tools-2026-09-15"
# Anthropic refuses a tool list whose tools are all deferred, hence a leading tool to anchor it.
DEFERRED_PLACEHOLDER = {"name": "__pi_deferred_placeholder__",
                        "description": "Reserved placeholder. Never available. Never call this.",
                        "input_schema": {"type": "object", "properties": {}, "required": []},
                        "defer_loading": True}


def native_tool_changes(model: Model, context: Context) -> bool:
    compat = model.get("compat") or {}
    both = compat.get("supportsMidConvoSystemMessages") and compat.get("supportsMidConvoToolChanges")
    return bool(both and context.get("tools"))


def system_message(message: Any, convert: Callable[[list[Tool]], list[JsonObject]] | None,
                   tool_name: Callable[[str], str]) -> JsonObject | None:
    """The ``system`` message for a later system message (None when it says nothing); ``convert``
    set means tool changes are native blocks."""
    blocks: list[JsonObject] = []
    if message.get("content"):
        blocks.append({"type": "text", "text": message["content"]})
    if convert is not None:
        added = message.get("toolsAdded") or []
        redefined = {tool["name"] for tool in added}  # a new definition replaces the old without a removal
        blocks += [{"type": "tool_removal", "tool": {"type": "tool_reference", "name": tool_name(tool["name"])}}
                   for tool in message.get("toolsRemoved") or [] if tool["name"] not in redefined]
        blocks += [{"type": "tool_addition", "tool": {"type": "tool_definition", "definition": definition}}
                   for definition in convert(added)]
    return {"role": "system", "content": blocks} if blocks else None
