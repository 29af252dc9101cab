"""Strict JSON-schema tools (``constrainedSampling: {"type": "json_schema", "strict": ...}``).

A tool that declares JSON-schema constrained sampling is sent strict where the model supports it
(``compat.supportsStrictMode``): its schema rewritten to the strict subset (every property
required, optional ones nullable, no extra properties). ``strict: "prefer"`` tools fall back to a
plain schema when the rewrite is impossible; ``"require"`` tools make that an error.

Claude (on Bedrock as on Anthropic) refuses a request whose strict tools pass its limits (observed:
20 strict tools; 16 optional or union-typed parameters across them) with one of
``STRICT_LIMIT_MESSAGES``. The request then goes again with the preferring tools plain, and the
session remembers it so later requests skip the refused attempt, keeping the tool definitions and
so the prompt cache stable.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

from pi_coding_agent.ai.apis.diagnostics import append_diagnostic
from pi_coding_agent.ai.types import JsonObject, Tool, now_ms

UNSUPPORTED_KEYS = ("$ref", "$defs", "definitions", "allOf", "oneOf", "patternProperties", "dependentSchemas",
                    "dependencies", "unevaluatedProperties", "propertyNames", "contains", "prefixItems", "not",
                    "if", "then", "else")
STRICT_LIMIT_MESSAGES = ("The compiled grammar is too large", "Too many strict tools (",
                         "Schemas contains too many parameters with union types (")
MAX_REMEMBERED_SESSIONS = 10_000

_over_limits: dict[str, None] = {}  # insertion-ordered: the oldest session is forgotten first


class UnsupportedStrictSchema(ValueError):
    """The schema uses something the strict subset cannot express."""


Refused = Callable[[str, object], bool] | None  # a host's extra refusals: (keyword, value) -> refused


def _structured(schema: object) -> bool:
    if not isinstance(schema, dict):
        return False
    kind = schema.get("type")
    types = [kind] if isinstance(kind, str) else kind if isinstance(kind, list) else []
    return "object" in types or "array" in types or "properties" in schema or "items" in schema


def _allows_null(schema: object) -> bool:
    if not isinstance(schema, dict):
        return False
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    if ("const" in schema and schema["const"] is None) or (isinstance(schema.get("enum"), list)
                                                          and None in schema["enum"]):
        return True
    return isinstance(schema.get("anyOf"), list) and any(_allows_null(v) for v in schema["anyOf"])


def _strict_object(schema: JsonObject, refused: Refused) -> None:
    if schema.get("additionalProperties", False) is not False:
        raise UnsupportedStrictSchema("schema-valued or true additionalProperties is unsupported")
    properties = schema.get("properties", {})
    if not isinstance(properties, dict):
        raise UnsupportedStrictSchema("object properties must be a schema map")
    required = schema.get("required", [])
    if not isinstance(required, list) or any(not isinstance(k, str) for k in required):
        raise UnsupportedStrictSchema("object required must be a string array")
    if any(k not in properties for k in required):
        raise UnsupportedStrictSchema("required contains an unknown property")
    for key, prop in properties.items():
        _strict_node(prop, refused)
        if key not in required and not _allows_null(prop):
            properties[key] = {"anyOf": [prop, {"type": "null"}]}
    schema["required"] = list(properties)
    schema["additionalProperties"] = False


def _strict_node(schema: object, refused: Refused = None) -> None:
    if not isinstance(schema, dict):
        raise UnsupportedStrictSchema("boolean schemas are unsupported")
    for key in UNSUPPORTED_KEYS:
        if key in schema:
            raise UnsupportedStrictSchema(f"{key} schemas are unsupported")
    if refused is not None:
        for key, value in schema.items():
            if refused(key, value):
                raise UnsupportedStrictSchema(f"{key}: {value!r} is unsupported")
    if "type" not in schema and "anyOf" not in schema and "enum" not in schema:
        raise UnsupportedStrictSchema("schemas without a type are unsupported")
    if "anyOf" in schema:
        variants = schema["anyOf"]
        if not isinstance(variants, list) or not variants:
            raise UnsupportedStrictSchema("anyOf must contain at least one schema")
        for variant in variants:
            if _structured(variant):
                raise UnsupportedStrictSchema("object and array unions are unsupported")
            _strict_node(variant, refused)
    if "items" in schema:
        if isinstance(schema["items"], list):
            raise UnsupportedStrictSchema("tuple schemas are unsupported")
        _strict_node(schema["items"], refused)
    if "properties" in schema and schema.get("type") != "object":
        raise UnsupportedStrictSchema("properties require type object")
    if schema.get("type") == "object":
        _strict_object(schema, refused)


def make_strict(schema: object, refused: Refused = None) -> JsonObject:
    """A strict copy of an object schema (``schema`` itself is left as it was)."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        raise UnsupportedStrictSchema("root schema must have type object")
    strict = copy.deepcopy(schema)
    _strict_node(strict, refused)
    return strict


def prefers_strict(tool: Tool) -> bool:
    sampling = tool.get("constrainedSampling") or {}
    return sampling.get("type") == "json_schema" and sampling.get("strict") == "prefer"


def strict_for(tool: Tool, supports_strict: bool, refused: Refused = None) -> bool:
    """Whether ``tool`` goes strict on a model that does (True) or does not support strict tools."""
    sampling = tool.get("constrainedSampling") or {}
    if sampling.get("type") != "json_schema":
        return False
    if supports_strict:
        try:
            make_strict(tool["parameters"], refused)
            return True
        except UnsupportedStrictSchema as exc:
            if sampling.get("strict") != "require":
                return False
            raise ValueError(f'Tool "{tool["name"]}" requires JSON-schema constrained sampling, but {exc}.') from None
    if sampling.get("strict") == "require":
        raise ValueError(f'Tool "{tool["name"]}" requires JSON-schema constrained sampling, '
                         "but strict tools are unsupported.")
    return False


def declared_schema(tool: Tool, supports_strict: bool, refused: Refused = None) -> tuple[JsonObject, bool]:
    """The parameters to send for ``tool`` and whether they are strict (rewritten) ones."""
    if strict_for(tool, supports_strict, refused):
        return make_strict(tool["parameters"], refused), True
    return tool["parameters"], False


def is_strict_limit_error(message: str) -> bool:
    return any(limit in message for limit in STRICT_LIMIT_MESSAGES)


def mark_over_limits(session_id: str | None) -> None:
    if session_id is None:
        return
    _over_limits[session_id] = None
    if len(_over_limits) > MAX_REMEMBERED_SESSIONS:
        del _over_limits[next(iter(_over_limits))]


def fall_back_plain(output: object, session_id: str | None, api: str, error: Exception) -> None:
    """Record a strict-limit refusal: the session goes plain from now on, the answer says why."""
    mark_over_limits(session_id)
    append_diagnostic(output, {"type": f"{api}_strict_tools_fallback", "timestamp": now_ms(),
                               "error": {"message": str(error)}, "details": {"reason": "strict_tool_limits_exceeded"}})


def forget(session_id: str) -> None:
    _over_limits.pop(session_id, None)


def over_limits(session_id: str | None) -> bool:
    return session_id is not None and session_id in _over_limits
