"""What scripts and the model see of a tool: its script identifier and a TypeScript declaration.

JSON schemas become TypeScript types (objects with sorted properties, ``Array<T>``, unions; a
property with a description or constraints gets ``//`` comment lines), because models are prompted
with pi's codemode conventions and sessions move between the two implementations.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from pi_coding_agent.ai.types import JsonObject

if TYPE_CHECKING:
    from pi_coding_agent.coding.codemode.host import CatalogTool


_IDENTIFIER = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")
_FIRST = re.compile(r"[A-Za-z_$]")
_REST = re.compile(r"[A-Za-z0-9_$]")
_LINE_BREAKS = re.compile("[\r\n\u2028\u2029]")
INPUT_MAX_CHARS = 16_000
_MAX_REF_EXPANSIONS = 32
_MAX_TAG_CHARS = 80
_TAG_KEYWORDS = ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum", "multipleOf", "minLength",
                 "maxLength", "pattern", "format", "minItems", "maxItems")
_LOWER = {"minimum", "exclusiveMinimum", "minLength", "minItems"}
_UPPER = {"maximum", "exclusiveMaximum", "maxLength", "maxItems"}
INDENT = "  "


def to_identifier(name: str) -> str:
    """Characters not valid in a JavaScript identifier become ``_`` (``my-tool`` is ``my_tool``)."""
    out = "".join(c if (_REST if i else _FIRST).fullmatch(c) else "_" for i, c in enumerate(name))
    return out or "_"


def _js(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _union(types: list[str]) -> str:
    unique = list(dict.fromkeys(types))
    if "unknown" in unique:
        return "unknown"
    return " | ".join(unique) if unique else "never"


def resolve_ref(ref: str, root: object) -> object:
    """The subschema a local ``$ref`` names in ``root``; None for remote or dangling references."""
    if ref != "#" and not ref.startswith("#/"):
        return None
    current = root
    for segment in (s for s in ref[2:].split("/") if s):
        key = segment.replace("~1", "/").replace("~0", "~")
        if not isinstance(current, dict) or key not in current:
            return None
        current = current[key]
    return current if isinstance(current, dict | bool) else None


class _Renderer:
    def __init__(self, root: object, tags: bool) -> None:
        self.root = root
        self.tags = tags
        self.resolving: set[str] = set()
        self.expansions = 0

    def type_of(self, schema: object) -> str:
        if schema is True:
            return "unknown"
        if schema is False:
            return "never"
        if not isinstance(schema, dict):
            return "unknown"
        if isinstance(schema.get("$ref"), str):
            return self._ref(schema["$ref"])
        if "const" in schema:
            return _js(schema["const"])
        if isinstance(schema.get("enum"), list):
            return _union([_js(v) for v in schema["enum"]])
        variants = schema.get("anyOf") if isinstance(schema.get("anyOf"), list) else schema.get("oneOf")
        if isinstance(variants, list):
            return _union([self.type_of(v) for v in variants])
        if isinstance(schema.get("allOf"), list):
            parts = [p for p in (self.type_of(s) for s in schema["allOf"]) if p != "unknown"]
            return " & ".join(f"({p})" if " | " in p else p for p in parts) if parts else "unknown"
        kind = schema.get("type")
        if isinstance(kind, list):
            return _union([self.type_of({**schema, "type": k}) for k in kind])
        simple = {"string": "string", "number": "number", "integer": "number", "boolean": "boolean", "null": "null"}
        if kind in simple:
            return simple[kind]
        if kind == "array" or (kind is None and ("items" in schema or "prefixItems" in schema)):
            return self._array(schema)
        if kind == "object" or (kind is None and any(k in schema for k in ("properties", "additionalProperties",
                                                                          "required"))):
            return self._object(schema)
        return "unknown"

    def _ref(self, ref: str) -> str:
        if ref in self.resolving or self.expansions >= _MAX_REF_EXPANSIONS:
            return "unknown"
        target = resolve_ref(ref, self.root)
        if target is None:
            return "unknown"
        self.expansions += 1
        self.resolving.add(ref)
        try:
            return self.type_of(target)
        finally:
            self.resolving.discard(ref)

    def _array(self, schema: JsonObject) -> str:
        items = schema.get("items")
        if items is not None and not isinstance(items, list):
            return f"Array<{self.type_of(items)}>"
        tuple_items = schema.get("prefixItems") if isinstance(schema.get("prefixItems"), list) else items
        if isinstance(tuple_items, list) and tuple_items:
            return "[" + ", ".join(self.type_of(i) for i in tuple_items) + "]"
        return "unknown[]"

    def _object(self, schema: dict[str, Any]) -> str:
        raw = schema.get("properties")
        properties: JsonObject = raw if isinstance(raw, dict) else {}
        required = set(schema.get("required") or []) if isinstance(schema.get("required"), list) else set()
        names = sorted(properties)
        members = [f"{n if _IDENTIFIER.match(n) else _js(n)}{'' if n in required else '?'}: "
                   f"{self.type_of(properties[n])};" for n in names]
        extra = schema.get("additionalProperties")
        if extra is not None and extra is not False:
            members.append(f"[key: string]: {'unknown' if extra is True else self.type_of(extra)};")
        elif extra is None and not names:
            members.append("[key: string]: unknown;")
        if not members:
            return "{}"
        comments = [self._comment(properties[n]) for n in names]
        if not any(comments):
            return "{ " + " ".join(members) + " }"
        lines = ["{"]
        for comment, member in zip(comments, members, strict=False):
            lines.extend(f"{INDENT}// {line}" for line in comment)
            lines.append(INDENT + member.replace("\n", "\n" + INDENT))
        lines.extend(INDENT + m for m in members[len(names):])
        lines.append("}")
        return "\n".join(lines)

    def _comment(self, prop: object) -> list[str]:
        description = prop.get("description") if isinstance(prop, dict) else None
        lines = [s.strip() for s in _LINE_BREAKS.split(description.strip())] if isinstance(description, str) else []
        lines = [s for s in lines if s]
        tags = constraint_tags(prop) if self.tags else ""
        return [*lines, tags] if tags else lines


def constraint_tags(prop: object) -> str:
    """``@integer @minimum 1 @default 20``: what the TypeScript type cannot say about a property."""
    if not isinstance(prop, dict):
        return ""
    variants = prop.get("anyOf") if isinstance(prop.get("anyOf"), list) else prop.get("oneOf")
    non_null = [v for v in variants if not (isinstance(v, dict) and v.get("type") == "null")] \
        if isinstance(variants, list) else []
    schemas = [prop] + ([non_null[0]] if len(non_null) == 1 and isinstance(non_null[0], dict) else [])
    tags: list[str] = []
    if any(s.get("type") == "integer" or (isinstance(s.get("type"), list) and "integer" in s["type"])
           for s in schemas):
        tags.append("@integer")
    for keyword in _TAG_KEYWORDS:
        values = [s.get(keyword) for s in schemas]
        if keyword in _LOWER or keyword in _UPPER:
            numbers = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
            if numbers:
                tags.append(f"@{keyword} {_num(max(numbers) if keyword in _LOWER else min(numbers))}")
            continue
        for value in dict.fromkeys(v for v in values if isinstance(v, str | int | float) and not isinstance(v, bool)):
            tags.append(f"@{keyword} {_num(value) if not isinstance(value, str) else value}")
    if any(s.get("uniqueItems") is True for s in schemas):
        tags.append("@uniqueItems")
    if prop.get("default") is not None:
        tags.append(f"@default {_js(prop['default'])}")
    if prop.get("deprecated") is True:
        tags.append("@deprecated")
    return " ".join(_LINE_BREAKS.sub(lambda m: f"\\u{ord(m.group()):04x}", t) for t in tags if len(t) <= _MAX_TAG_CHARS)


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def schema_to_type(schema: object, max_chars: int | None = None) -> str:
    rendered = _Renderer(schema, True).type_of(schema)
    if max_chars is None or len(rendered) <= max_chars:
        return rendered
    plain = _Renderer(schema, False).type_of(schema)
    return plain if len(plain) <= max_chars else "unknown"


def output_type(schema: object) -> str:
    return "unknown" if schema is None else schema_to_type(schema)


def tool_signature(name: str, input_schema: object, output_schema: object) -> str:
    args = "unknown" if input_schema is None else schema_to_type(input_schema, INPUT_MAX_CHARS)
    return f"{to_identifier(name)}(args: {args}): Promise<{output_type(output_schema)}>;"


def tool_sample(name: str, description: str, input_schema: object, output_schema: object) -> str:
    """The description, then the tool as a member of ``declare const tools``."""
    declaration = f"declare const tools: {{ {tool_signature(name, input_schema, output_schema)} }};"
    return f"{description.strip()}\n\ncodemode tool declaration:\n```ts\n{declaration}\n```"


def _fields(schema: object, root: object, depth: int) -> str | None:
    """``{ output, exit_code, full_output_path? }`` of an object schema, nested ``depth`` levels."""
    resolved = _follow(schema, root)
    if not isinstance(resolved, dict) or resolved.get("type") != "object" or not isinstance(
            resolved.get("properties"), dict):
        return None
    required = set(resolved.get("required") or [])
    parts = []
    for name, field in resolved["properties"].items():
        target = _follow(field, root)
        const = target.get("const") if isinstance(target, dict) else None
        nested = _js(const) if const is not None else (_fields(field, root, depth - 1) if depth > 0 else None)
        parts.append(f"{name}{'' if name in required else '?'}{': ' + nested if nested else ''}")
    return "{ " + ", ".join(parts) + " }"


def _follow(schema: object, root: object) -> object:
    seen: set[int] = set()
    while isinstance(schema, dict) and isinstance(schema.get("$ref"), str) and id(schema) not in seen:
        target = resolve_ref(schema["$ref"], root)
        if target is None:
            break
        seen.add(id(schema))
        schema = target
    return schema


def describe_output(name: str, schema: object) -> str:
    """What a call resolves to, in one line, for the description of a declared tool."""
    rendered = output_type(schema)
    if rendered == "string":
        return "a string"
    fields = None if schema is None else (_fields(schema, schema, 1) or _union_fields(schema))
    if fields:
        return f"`{fields}`"
    if "\n" not in rendered:
        return f"`{rendered}`"
    return f"a value; `await describeTool({_js(name)})` shows its type"


def _union_fields(schema: object) -> str | None:
    resolved = _follow(schema, schema)
    variants = resolved.get("anyOf") or resolved.get("oneOf") if isinstance(resolved, dict) else None
    if not isinstance(variants, list) or not variants:
        return None
    described = [_fields(v, schema, 0) for v in variants]
    return " | ".join(d for d in described if d) if all(described) else None


def sample(tool: CatalogTool) -> str:
    """Description (with prompt guidelines) and declaration, as listings and ``ALL_TOOLS`` show it."""
    bullets = [f"- {g.strip()}" for g in tool.guidelines if g.strip()]
    description = f"{tool.description.strip()}\n\n" + "\n".join(bullets) if bullets else tool.description
    return tool_sample(tool.name, description, tool.parameters, tool.output_schema or {"type": "string"})
