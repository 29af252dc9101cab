"""``tool_search``: BM25 over the metadata of tools not declared to the model, loading the matches.

Ranking follows pi's rules so the same query loads the same tools: the name weighs 3 times a term's
IDF, the server (namespace) text 0.5 times, the description is length-normalised Okapi BM25
(k1 1.2, b 0.75); more covered query terms beat a higher score, a query that is exactly a tool's
name ranks it first, and a tool whose whole local name is in the query gets a bonus. Loading adds
the matches to the active tools, so the next model call declares them (a system message records it
in the transcript, which keeps them declared on that branch after resume and fork).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from pi_coding_agent.agent.tool import AgentTool, ToolResult, UpdateCallback
from pi_coding_agent.ai.abort import AbortSignal
from pi_coding_agent.ai.types import JsonObject

if TYPE_CHECKING:  # the ranking loads with the first search, not with the session's tools
    from pi_coding_agent.coding.tools.ranking import SearchDocument

TOOL_SEARCH = "tool_search"
DEFAULT_LIMIT = 8
STOP_WORDS = frozenset(["a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "in", "is", "it", "of", "on", "or", "that", "the", "this", "to", "with"])
DESCRIPTION = (
    "# Tool discovery\n\nSearches over deferred tool metadata with BM25 and exposes matching tools for the next "
    "model call.\n\nSome of the tools, such as tools of MCP servers, may not have been provided to you upfront, "
    f"and you should use this tool (`{TOOL_SEARCH}`) to search for the required tools. For MCP tool discovery, "
    f"always use `{TOOL_SEARCH}`.")
PARAMETERS: JsonObject = {"type": "object", "required": ["query"], "properties": {
    "query": {"description": "Search query for deferred tools.", "type": "string"},
    "limit": {"description": f"Maximum number of tools to return. Defaults to {DEFAULT_LIMIT}.", "type": "number"}}}


def _stem(term: str) -> str:
    if len(term) > 4 and term.endswith("ies"):
        return term[:-3] + "y"
    if len(term) > 4 and re.search(r"(ches|shes|sses|xes|zes)$", term):
        return term[:-2]
    if len(term) > 3 and term.endswith("s") and not term.endswith("ss"):
        return term[:-1]
    return term


def tokenize(text: str) -> list[str]:
    """Words split at identifier boundaries, lower-cased, stop words dropped, ASCII words singular."""
    from pi_coding_agent.coding.tools.ranking import split_words

    return [_stem(w) if re.fullmatch(r"[a-z0-9]+", w) else w for w in split_words(text) if w not in STOP_WORDS]


def document_of(tool: Any, namespace_text: str) -> SearchDocument:
    from pi_coding_agent.coding.tools.ranking import tool_document

    return tool_document(tool.name, tool.description, tool.parameters, namespace_text)


def rank(query: str, documents: list[SearchDocument], limit: int) -> list[str]:
    """``tool_search``'s ranking: the shared BM25 with this tool's tokenizer."""
    from pi_coding_agent.coding.tools.ranking import rank as rank_tools

    return rank_tools(query, documents, limit, tokenize)


class ToolSearchTool(AgentTool):
    """Loads matches among ``candidates()`` (searchable tools not active yet) through ``load(names)``."""

    name = label = TOOL_SEARCH
    description = DESCRIPTION
    parameters = PARAMETERS
    prompt_snippet = "Search for tools that are not loaded yet and load the matches"
    execution_mode: Literal["parallel", "sequential"] = "parallel"

    def __init__(self, candidates: Callable[[], list[tuple[AgentTool, str]]], load: Callable[[list[str]], None],
                 ready: Callable[[], Any]) -> None:
        self._candidates = candidates  # (tool, namespace text) pairs
        self._load = load
        self._ready = ready  # awaitable factory: every server settled

    async def execute(self, tool_call_id: str, params: JsonObject, signal: AbortSignal,
                      on_update: UpdateCallback) -> ToolResult:
        query = str(params.get("query") or "")
        if not query.strip():
            raise ValueError("query must not be empty")
        limit = params.get("limit", DEFAULT_LIMIT)
        if isinstance(limit, float) and limit.is_integer():
            limit = int(limit)
        if not isinstance(limit, int) or isinstance(limit, bool) or limit <= 0:
            raise ValueError("limit must be a positive integer")
        await self._ready()
        candidates = self._candidates()
        found = rank(query, [document_of(tool, ns) for tool, ns in candidates], limit)
        if found:
            self._load(found)
        described = {tool.name: tool.description for tool, _ in candidates}
        if not found:
            text = "No matching tools found."
        else:
            lines = [f"- {name}: {described[name].strip().splitlines()[0] if described[name].strip() else ''}"
                     for name in found]
            plural = "" if len(found) == 1 else "s"
            text = f"Loaded {len(found)} tool{plural}. They are available from your next call:\n" + "\n".join(lines)
        return ToolResult(content=[{"type": "text", "text": text}], details={"loaded": found})
