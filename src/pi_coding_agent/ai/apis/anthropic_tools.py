"""Tool definitions for the Anthropic Messages API.

With ``compat.supportsStrictTools`` a tool asking for JSON-schema constrained sampling is sent
``strict`` with its schema rewritten, unless the schema uses a keyword Anthropic's strict mode
refuses (then a preferring tool goes plain). A request refused for passing Claude's strict-tool
limits is sent again with the preferring tools plain (``strict_schema``), as pi does.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Any

from pi_coding_agent.ai.apis import strict_schema
from pi_coding_agent.ai.stream import ProviderError, StreamOptions
from pi_coding_agent.ai.types import AssistantMessage, JsonObject, Model, Tool

CLAUDE_CODE_TOOL_NAMES = {
    name.lower(): name
    for name in (
        "Read", "Write", "Edit", "Bash", "Grep", "Glob", "AskUserQuestion", "EnterPlanMode", "ExitPlanMode",
        "KillShell", "NotebookEdit", "Skill", "Task", "TaskOutput", "TodoWrite", "WebFetch", "WebSearch",
    )
}
# Keywords Anthropic's strict tool use refuses (the whole request fails with a 400)
STRICT_REFUSED_KEYS = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
                                 "maxItems", "uniqueItems", "minContains", "maxContains", "minProperties",
                                 "maxProperties"})
STRICT_STRING_FORMATS = frozenset({"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4",
                                   "ipv6", "uuid"})
SCHEMA_KEYS = ("additionalProperties", "$defs", "definitions")  # root keys kept besides properties/required


def tool_name(name: str, oauth: bool) -> str:
    """Subscription (OAuth) requests name the built-ins as Claude Code does."""
    return CLAUDE_CODE_TOOL_NAMES.get(name.lower(), name) if oauth else name


def strict_refused(key: str, value: object) -> bool:
    if key in STRICT_REFUSED_KEYS:
        return True
    if key == "minItems":
        return value not in (0, 1)
    return key == "format" and (not isinstance(value, str) or value not in STRICT_STRING_FORMATS)


def _supports_strict(model: Model) -> bool:
    return bool((model.get("compat") or {}).get("supportsStrictTools"))


def goes_strict(model: Model, tool: Tool, plain_preferred: bool) -> bool:
    if plain_preferred and strict_schema.prefers_strict(tool):
        return False
    return strict_schema.strict_for(tool, _supports_strict(model), strict_refused)


def has_preferred_strict(model: Model, tools: list[Tool]) -> bool:
    """Whether going plain would change anything: some preferring tool is sent strict."""
    return any(strict_schema.prefers_strict(t) and goes_strict(model, t, False) for t in tools)


def convert_tools(model: Model, tools: list[Tool], oauth: bool, control: dict[str, str] | None,
                  plain_preferred: bool = False) -> list[JsonObject]:
    compat = model.get("compat") or {}
    eager = compat.get("supportsEagerToolInputStreaming", True) is not False
    if compat.get("supportsCacheControlOnTools", True) is False:
        control = None
    out = []
    for index, tool in enumerate(tools):
        strict = goes_strict(model, tool, plain_preferred)
        schema = strict_schema.make_strict(tool["parameters"], strict_refused) if strict else tool["parameters"]
        # Anthropic refuses root anyOf/oneOf/allOf: only these root keys go (all of a strict schema)
        input_schema: JsonObject = {"type": "object", "properties": schema.get("properties", {}),
                                        "required": schema.get("required", [])}
        input_schema.update({key: schema[key] for key in SCHEMA_KEYS if key in schema})
        entry: JsonObject = {"name": tool_name(tool["name"], oauth), "description": tool["description"]}
        if eager:
            entry["eager_input_streaming"] = True
        if strict:
            entry["strict"] = True
        entry["input_schema"] = {**schema, **input_schema} if strict else input_schema
        if control and index == len(tools) - 1:
            entry["cache_control"] = control
        out.append(entry)
    return out


async def strict_fallback(request: Callable[[bool], Awaitable[AsyncIterator[object]]], options: StreamOptions,
                          output: AssistantMessage, retry_plain: bool) -> AsyncGenerator[Any, None]:
    """The events of ``request(plain)``; refused before streaming for Claude's strict-tool limits,
    the request goes again with the preferring tools plain, and the session remembers it."""
    plain = strict_schema.over_limits(options.session_id)
    while True:
        events = await request(plain)
        started = False
        try:
            async for sse in events:
                started = True
                yield sse
            return
        except ProviderError as error:
            if started or plain or not retry_plain or not strict_schema.is_strict_limit_error(str(error)):
                raise
            plain = True
            strict_schema.fall_back_plain(output, options.session_id, "anthropic", error)
