"""A server tool as an ``AgentTool``: what the model declares and what the agent executes.

The adapter resolves its server at call time (a reconnect replaces the client underneath), refuses
a tool the server has withdrawn or that is hidden now, and reports progress as partial results.
Exposure, namespace, annotations and ``call`` are also the interface codemode consumes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from pi_coding_agent.agent.tool import AgentTool, ToolResult, UpdateCallback
from pi_coding_agent.ai.abort import AbortSignal
from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.mcp.results import convert_result

if TYPE_CHECKING:
    from pi_coding_agent.coding.mcp.connection import ServerConnection

ANNOTATION_HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")


def normalize_schema(schema: object) -> JsonObject:
    """An object schema: servers may omit ``type`` and some providers reject a missing ``properties``."""
    base = dict(schema) if isinstance(schema, dict) else {}
    base["type"] = base.get("type") or "object"
    base.setdefault("properties", {})
    return base


# MCP content blocks as scripts read them most: one type with the fields of text and image blocks.
CONTENT_BLOCK_SCHEMA: JsonObject = {
    "type": "object",
    "properties": {"type": {"enum": ["text", "image", "audio", "resource_link", "resource"]},
                   "text": {"type": "string"}, "data": {"type": "string"}, "mimeType": {"type": "string"}},
    "required": ["type"],
    "additionalProperties": True,
}
_DATA_KEYWORDS = frozenset({"const", "enum", "default", "examples"})  # values are data, not schemas
_MAP_KEYWORDS = frozenset({"properties", "patternProperties", "dependentSchemas", "dependencies", "$defs",
                           "definitions"})  # keys are names, values schemas


def result_schema(structured: object) -> JsonObject:
    """Output schema of every MCP tool, as pi declares it: the ``CallToolResult`` a codemode script
    receives, the tool's own output schema (if any) as its ``structuredContent``."""
    return {
        "type": "object",
        "properties": {
            "content": {"type": "array", "items": CONTENT_BLOCK_SCHEMA},
            "structuredContent": _relocate(structured, "#/properties/structuredContent") if structured else {},
            "isError": {"type": "boolean"},
        },
        "required": ["content"],
        "additionalProperties": True,  # fields later protocol versions add
    }


def _relocate(schema: object, pointer: str) -> object:
    """``schema`` moved to ``pointer`` of an enclosing schema: its local ``$ref``s point below it."""
    if isinstance(schema, list):
        return [_relocate(item, pointer) for item in schema]
    if not isinstance(schema, dict):
        return schema
    moved: JsonObject = {}
    for key, value in schema.items():
        if key == "$ref" and isinstance(value, str) and (value == "#" or value.startswith("#/")):
            moved[key] = pointer + value[1:]
        elif key in _DATA_KEYWORDS:
            moved[key] = value
        elif key in _MAP_KEYWORDS and isinstance(value, dict):
            moved[key] = {name: _relocate(sub, pointer) for name, sub in value.items()}
        else:
            moved[key] = _relocate(value, pointer)
    return moved


JSON_TYPES = frozenset({"string", "number", "integer", "boolean", "object", "array", "null"})


def schema_problem(schema: object, path: str = "inputSchema", depth: int = 0) -> str | None:
    """Why a tool's schema would break a request (providers reject the whole call), or None.

    Only what makes a schema unusable is checked: non-object schemas, unknown ``type`` names,
    non-object ``properties``, non-list ``required``.
    """
    if isinstance(schema, bool) and depth > 0:
        return None
    if not isinstance(schema, dict) or depth > 64:
        return f"{path} must be an object"
    kinds = schema.get("type")
    for kind in kinds if isinstance(kinds, list) else [kinds] if kinds is not None else []:
        if kind not in JSON_TYPES:
            return f"{path}.type {kind!r} is not a JSON Schema type"
    properties = schema.get("properties")
    if properties is not None and not isinstance(properties, dict):
        return f"{path}.properties must be an object"
    if "required" in schema and not isinstance(schema["required"], list):
        return f"{path}.required must be an array"
    for name, sub in (properties or {}).items():
        if problem := schema_problem(sub, f"{path}.properties.{name}", depth + 1):
            return problem
    items = schema.get("items")
    return schema_problem(items, f"{path}.items", depth + 1) if isinstance(items, dict) else None


def tool_annotations(tool: JsonObject) -> dict[str, bool] | None:
    raw = tool.get("annotations")
    if not isinstance(raw, dict):
        return None
    hints = {hint: raw[hint] for hint in ANNOTATION_HINTS if isinstance(raw.get(hint), bool)}
    return hints or None


class McpTool(AgentTool):
    """``mcp__<server>__<tool>``; ``exposure`` is pi's (``direct``, ``deferred``, ``codemode``, ``hidden``)."""

    execution_mode: Literal["parallel", "sequential"] = "parallel"

    def __init__(self, name: str, server: str, tool: dict[str, Any], exposure: str, namespace: str,
                 connection: ServerConnection) -> None:
        self.name = name
        self.server = server
        self.tool_name: str = tool["name"]
        self.label = f"{server}/{self.tool_name}"
        title = tool.get("title") or (tool.get("annotations") or {}).get("title")
        self.description = (str(tool.get("description") or "").strip() or title
                            or f"MCP tool {self.tool_name} from server {server}")
        self.parameters = normalize_schema(tool.get("inputSchema"))
        self.output_schema = result_schema(tool.get("outputSchema"))
        self.annotations = tool_annotations(tool)
        self.exposure = exposure
        self.namespace = namespace
        self._connection = connection  # reconnects replace its client, never the connection itself
        self.available = True  # False once the server withdrew it or it was hidden

    async def call(self, arguments: JsonObject,
                   on_progress: Callable[[JsonObject], None] | None = None) -> JsonObject:
        """The raw ``CallToolResult`` (what codemode scripts receive); raises when unreachable."""
        if not self.available or self.exposure == "hidden":
            raise RuntimeError(f'MCP tool "{self.label}" is no longer available.')
        return await self._connection.call_tool(self.tool_name, arguments, on_progress)

    async def execute(self, tool_call_id: str, params: JsonObject, signal: AbortSignal,
                      on_update: UpdateCallback) -> ToolResult:
        details = {"server": self.server, "tool": self.tool_name}

        def progress(note: JsonObject) -> None:
            total = f"/{note['total']}" if note.get("total") is not None else ""
            text = note.get("message") or f"Progress {note.get('progress')}{total}"
            on_update(ToolResult(content=[{"type": "text", "text": str(text)}], details=details))

        result = await self.call(params or {}, progress)
        content, shaped, structured, is_error = convert_result(self.server, self.tool_name, result,
                                                               self._connection.has_resources)
        return ToolResult(content=content, details=shaped, is_error=is_error,  # type: ignore[arg-type]
                          structured_content=structured)
