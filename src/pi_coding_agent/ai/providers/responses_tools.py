"""Tools on the Responses APIs (OpenAI, Azure, Codex): top-level, or declared inside the input.

A model whose compat has both ``supportsMidConvoSystemMessages`` and ``supportsAdditionalTools``
gets no top-level ``tools``: ``additional_tools`` input items accumulate (a later one adds tools and
replaces same-name ones, none can remove), so the leading prompt declares its tools in one, each
later system message that adds tools declares them where it stands, and a removal is announced in
the message's text. The wording of the two notices is pi's: the model reads the same request.
"""

from __future__ import annotations

from typing import Any

from pi_coding_agent.ai.providers.strict_schema import declared_schema
from pi_coding_agent.ai.types import Model, Tool

INCREMENTAL_NOTICE = (
    "This is an incremental tools update. Previously declared tools remain available unless explicitly "
    "marked unavailable. A tool declared again here is available again, and its latest definition replaces "
    "the earlier one.")
REMOVAL_NOTICE = "The following tools are no longer available. Do not call them:"


def tools_in_input(model: Model) -> bool:
    """Whether tools are declared in ``additional_tools`` input items instead of a top-level list."""
    compat = model.get("compat") or {}
    return bool(compat.get("supportsMidConvoSystemMessages") and compat.get("supportsAdditionalTools"))


def convert_tools(tools: list[Any], supports_strict: bool, default_strict: bool | None) -> list[dict[str, Any]]:
    """Function tools; a tool asking for JSON-schema constrained sampling goes strict where it can.

    ``strict`` is written only for hosts that take it, with ``default_strict`` for the other tools
    (the OpenAI API says false, Codex null).
    """
    out: list[dict[str, Any]] = []
    for tool in tools:
        parameters, strict = declared_schema(tool, supports_strict)
        item: dict[str, Any] = {"type": "function", "name": tool["name"], "description": tool["description"],
                                "parameters": parameters}
        if supports_strict:
            item["strict"] = True if strict else default_strict
        out.append(item)
    return out


class InputDeclarations:
    """The tool items of one request's input, in transcript order (see the module docstring)."""

    def __init__(self, supports_strict: bool, default_strict: bool | None) -> None:
        self.supports_strict = supports_strict
        self.default_strict = default_strict
        self.declared = False
        self.unavailable: dict[str, None] = {}  # removed and not declared again (insertion-ordered)

    def added(self, tools: list[Tool], role: str = "developer") -> list[dict[str, Any]]:
        """An ``additional_tools`` item for ``tools``, after the incremental notice unless it is the first."""
        for tool in tools:
            self.unavailable.pop(tool["name"], None)
        if not tools:
            return []
        items: list[dict[str, Any]] = []
        if self.declared:
            notice = INCREMENTAL_NOTICE
            if self.unavailable:
                notice += f"\nStill unavailable: {', '.join(self.unavailable)}."
            items.append({"role": role, "content": notice})
        self.declared = True
        items.append({"type": "additional_tools", "role": "developer",
                      "tools": convert_tools(tools, self.supports_strict, self.default_strict)})
        return items

    def system_message(self, message: Any, role: str) -> list[dict[str, Any]]:
        """A later system message: its additions, then its text with the true removals announced."""
        added = message.get("toolsAdded") or []
        items = self.added(added, role)
        names = {tool["name"] for tool in added}
        removed = [tool["name"] for tool in message.get("toolsRemoved") or [] if tool["name"] not in names]
        parts = [message.get("content") or ""]
        if removed:
            parts.append("\n".join([REMOVAL_NOTICE, *(f"- {name}" for name in removed)]))
        self.unavailable.update(dict.fromkeys(removed))
        text = "\n\n".join(part for part in parts if part)
        if text:
            items.append({"role": role, "content": text})
        return items
