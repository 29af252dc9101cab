"""Tools on the Responses APIs (OpenAI, Azure, Codex): top-level, or declared inside the input.

Which of pi's three ways (``ai/tool_changes.py``) a model gets follows its compat:

* ``supportsMidConvoSystemMessages`` and ``supportsAdditionalTools``: ``"changes"``. No top-level
  ``tools``: ``additional_tools`` input items accumulate (a later one adds tools and replaces
  same-name ones, none can remove), so the leading prompt declares its tools in one, each later
  system message that adds tools declares them where it stands, and a removal is announced in the
  message's text.
* otherwise ``supportsToolSearch``: ``"additions"``. A tool added later is declared where it was
  added as the answer of a client-executed tool search: a ``tool_search_call`` item and its
  ``tool_search_output`` holding the tools (``defer_loading: true``), with a call id derived from
  the message's position and the tool names, so every later request replays the same pair.
* otherwise ``"none"``: one top-level list.

The wording of the notices is pi's: the model reads the same request.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from pi_coding_agent.ai import tool_changes
from pi_coding_agent.ai.apis.grammar_tools import resolve_grammar
from pi_coding_agent.ai.apis.short_hash import short_hash
from pi_coding_agent.ai.apis.strict_schema import declared_schema
from pi_coding_agent.ai.types import Context, JsonObject, Model, SystemMessage, Tool

INCREMENTAL_NOTICE = (
    "This is an incremental tools update. Previously declared tools remain available unless explicitly "
    "marked unavailable. A tool declared again here is available again, and its latest definition replaces "
    "the earlier one.")
REMOVAL_NOTICE = "The following tools are no longer available. Do not call them:"


def tool_support(model: Model) -> str:
    """``"changes"``, ``"additions"`` or ``"none"`` (see the module docstring)."""
    compat = model.get("compat") or {}
    if compat.get("supportsMidConvoSystemMessages") and compat.get("supportsAdditionalTools"):
        return "changes"
    return "additions" if compat.get("supportsToolSearch") else "none"


def convert_tools(tools: list[Tool], supports_strict: bool, default_strict: bool | None, grammar: bool = False,
                  deferred: bool = False) -> list[JsonObject]:
    """Function tools, or custom ones for tools with a grammar where the model takes them (``grammar``).

    A tool asking for JSON-schema constrained sampling goes strict where it can; ``strict`` is
    written only for hosts that take it, with ``default_strict`` for the other tools (the OpenAI
    API says false, Codex null). ``deferred`` marks the tools of a tool search result.
    """
    out: list[JsonObject] = []
    for tool in tools:
        found = resolve_grammar(tool, grammar)
        if found is not None:
            item: JsonObject = {"type": "custom", "name": tool["name"], "description": tool["description"],
                                    "format": {"type": "grammar", "syntax": found.syntax,
                                               "definition": found.definition}}
            if deferred:
                item["defer_loading"] = True
            out.append(item)
            continue
        parameters, strict = declared_schema(tool, supports_strict)
        item = {"type": "function", "name": tool["name"], "description": tool["description"], "parameters": parameters}
        if deferred:
            item["defer_loading"] = True
        if supports_strict:
            item["strict"] = True if strict else default_strict
        out.append(item)
    return out


@dataclass(frozen=True)
class ToolFormat:
    """How one backend writes tool definitions (see ``convert_tools``)."""

    supports_strict: bool
    default_strict: bool | None
    grammar: bool = False

    def convert(self, tools: list[Tool], deferred: bool = False) -> list[JsonObject]:
        return convert_tools(tools, self.supports_strict, self.default_strict, self.grammar, deferred)


class Declarations(Protocol):
    """Where one request declares its tools: ``top_level``, and items placed in its input."""

    top_level: list[Tool]

    def leading(self, tools: list[Tool]) -> list[JsonObject]:
        """Items before the leading prompt, for its tools."""

    def system_message(self, message: SystemMessage, role: str, seed: str) -> list[JsonObject]:
        """A later system message's items; ``seed`` names its position (``system:<n>``)."""


class InputDeclarations:
    """``"changes"``: every declaration in ``additional_tools`` items, in transcript order."""

    def __init__(self, tool_format: ToolFormat) -> None:
        self.format = tool_format
        self.top_level: list[Tool] = []
        self.declared = False
        self.unavailable: dict[str, None] = {}  # removed and not declared again (insertion-ordered)

    def leading(self, tools: list[Tool]) -> list[JsonObject]:
        return self.added(tools)

    def added(self, tools: list[Tool], role: str = "developer") -> list[JsonObject]:
        """An ``additional_tools`` item for ``tools``, after the incremental notice unless it is the first."""
        for tool in tools:
            self.unavailable.pop(tool["name"], None)
        if not tools:
            return []
        items: list[JsonObject] = []
        if self.declared:
            notice = INCREMENTAL_NOTICE
            if self.unavailable:
                notice += f"\nStill unavailable: {', '.join(self.unavailable)}."
            items.append({"role": role, "content": notice})
        self.declared = True
        items.append({"type": "additional_tools", "role": "developer", "tools": self.format.convert(tools)})
        return items

    def system_message(self, message: SystemMessage, role: str, seed: str) -> list[JsonObject]:
        """Its additions, then its text with the true removals announced."""
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


class TranscriptDeclarations:
    """``"additions"`` and ``"none"``: a top-level list, and (additions) later additions as tool
    search results where they were made."""

    def __init__(self, tool_format: ToolFormat, context: Context, support: str) -> None:
        self.format = tool_format
        self.top_level, self.folded = tool_changes.plan(context, support)
        self.index = 0  # of the system message in hand; the leading prompt is 0

    def leading(self, tools: list[Tool]) -> list[JsonObject]:
        return []

    def system_message(self, message: SystemMessage, role: str, seed: str) -> list[JsonObject]:
        self.index += 1
        added = message.get("toolsAdded") or []
        items = self.search_result(added, seed) if added and self.index >= self.folded else []
        if message.get("content"):
            items.append({"role": role, "content": message["content"]})
        return items

    def search_result(self, tools: list[Tool], seed: str) -> list[JsonObject]:
        """The tool search pi replays for tools loaded at ``seed``."""
        names = [tool["name"] for tool in tools]
        call_id = f"pi_tool_load_{short_hash(seed + ':' + ','.join(names))}"
        search: JsonObject = {"type": "tool_search_call", "call_id": call_id, "execution": "client", "status": "completed",
                  "arguments": {"query": " ".join(names), "limit": len(names)}}
        return [search, {"type": "tool_search_output", "call_id": call_id, "execution": "client",
                         "status": "completed", "tools": self.format.convert(tools, deferred=True)}]


def declarations_for(model: Model, context: Context, tool_format: ToolFormat) -> Declarations:
    support = tool_support(model)
    if support == "changes":
        return InputDeclarations(tool_format)
    return TranscriptDeclarations(tool_format, context, support)
