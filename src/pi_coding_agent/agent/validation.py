"""Tool-argument validation: a small JSON-schema checker with pi's coercions and error texts.

Models send loosely typed arguments (``"10"`` for a number, one value for a list, ``null`` for an
omitted option), so arguments are coerced towards the schema before they are checked, in three
passes: optional nulls are dropped, values are converted by the schema's keywords, then primitives
are coerced by ``type`` (for type lists). Errors are reported one per failing keyword, at the value
that failed, with pi 1.6.0's wording (``missing``, ``expected string, got integer``, ``unknown
field`` ...) and its dotted paths (``root``, ``edits.0.oldText``): the model reads these texts and
sessions record them, so they must match.

Covered keywords: type, enum, const, properties, required, additionalProperties,
patternProperties, items, prefixItems, minItems, maxItems, uniqueItems, minimum, maximum,
exclusiveMinimum, exclusiveMaximum, multipleOf, minLength, maxLength, pattern, anyOf, oneOf,
allOf, not and local ``$ref``s (``#/...``). Other keywords are ignored (they never fail a call).
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Callable, Iterable, Mapping
from functools import lru_cache
from typing import cast

from pi_coding_agent.agent.js_values import (
    CONVERTERS,
    Json,
    coerce_primitive,
    convert_literal,
    is_integer,
    is_number,
    js_json,
    js_number_text,
    json_equal,
    try_number,
    type_name,
)
from pi_coding_agent.ai.types import JsonObject

Errors = list[tuple[str, str]]  # (JSON pointer, message)


class ToolArgumentsError(ValueError):
    """Arguments a tool cannot run with; ``str(err)`` is the text the model gets back."""


def validate_tool_arguments(tool_name: str, schema: JsonObject, tool_call: Mapping[str, object]) -> JsonObject:
    """The coerced arguments of ``tool_call``, or ``ToolArgumentsError`` with pi's message.

    The arguments are copied first, so a tool that edits its parameters never edits the transcript.
    """
    if tool_call.get("argumentsError"):
        raise ToolArgumentsError(f'Invalid arguments for tool "{tool_name}": {tool_call["argumentsError"]}')
    received = tool_call.get("arguments", {})
    validator = SchemaValidator(schema)
    value = validator.coerce(copy.deepcopy(received))
    errors = validator.errors(value)
    if not errors:
        return cast(JsonObject, value)  # the coerced copy of the arguments object
    lines = "\n".join(f"  - {format_path(path)}: {message}" for path, message in errors)
    raise ToolArgumentsError(
        f'Validation failed for tool "{tool_name}":\n{lines}\n\nReceived arguments:\n{js_json(received, indent=2)}'
    )


def format_path(pointer: str) -> str:
    """A JSON pointer as the model sees it: ``/edits/0/oldText`` -> ``edits.0.oldText``."""
    if not pointer:
        return "root"
    return ".".join(p.replace("~1", "/").replace("~0", "~") for p in pointer[1:].split("/"))


def _pointer(path: str, key: object) -> str:
    return f"{path}/{str(key).replace('~', '~0').replace('/', '~1')}"


_TYPE_CHECKS: dict[str, Callable[[Json], bool]] = {
    "string": lambda v: isinstance(v, str),
    "number": is_number,
    "integer": is_integer,
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
}


def _never(v: Json) -> bool:
    return False


def _types_of(node: JsonObject) -> list[str]:
    kind = node.get("type")
    if isinstance(kind, str):
        return [kind]
    return [t for t in kind if isinstance(t, str)] if isinstance(kind, list) else []


@lru_cache(maxsize=256)
def _regex(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _item_schema(node: JsonObject, index: int) -> Json:
    items = node.get("items")
    if isinstance(items, list):
        return items[index] if index < len(items) else None
    prefix = node.get("prefixItems")
    if isinstance(prefix, list) and index < len(prefix):
        return prefix[index]
    return items


def _map_members(
    v: JsonObject, node: JsonObject, convert: Callable[[Json, Json], Json],
    drop: Callable[[str, Json, JsonObject], bool] | None = None,
) -> JsonObject:
    """Pass each property through ``convert(value, schema)`` for every schema that governs it
    (``drop`` removes one instead); the object is copied only when something changes."""
    declared = node.get("properties") if isinstance(node.get("properties"), dict) else {}
    assert isinstance(declared, dict)
    out: JsonObject | None = None
    for key, item in v.items():
        if drop is not None and drop(key, item, declared):
            out = dict(v) if out is None else out
            del out[key]
            continue
        new = item
        for schema in _member_schemas(node, key, declared):
            new = convert(new, schema)
        if new is not item:
            out = dict(v) if out is None else out
            out[key] = new
    return v if out is None else out


def _member_schemas(node: JsonObject, key: str, declared: JsonObject) -> list[Json]:
    """The schemas a member ``key`` answers to: ``properties``, matching patterns, else ``additionalProperties``."""
    schemas = [declared[key]] if key in declared else []
    patterns = node.get("patternProperties")
    if isinstance(patterns, dict):
        schemas += [s for p, s in patterns.items() if _regex(p).search(key)]
    additional = node.get("additionalProperties")
    if not schemas and isinstance(additional, dict):
        schemas.append(additional)
    return schemas


def _map_items(items: list[Json], fn: Callable[[Json, int], Json]) -> list[Json]:
    """``items`` mapped, copied only when an item changes (copy-on-write keeps identities)."""
    out: list[Json] | None = None
    for i, item in enumerate(items):
        new = fn(item, i)
        if new is not item:
            if out is None:
                out = list(items)
            out[i] = new
    return items if out is None else out


class SchemaValidator:
    """Coerces and checks values against one JSON schema (its local ``$ref``s resolve in it)."""

    def __init__(self, schema: Json) -> None:
        self.schema = schema
        self._entered: list[tuple[int, int]] = []

    # ---- references --------------------------------------------------------------------------

    def _resolve(self, ref: str) -> Json:
        """The target of a local reference, or None when it names nothing."""
        if not ref.startswith("#"):
            return None
        node: Json = self.schema
        for part in ref[1:].split("/")[1:] if ref != "#" else []:
            key = part.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and key in node:
                node = node[key]
            elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
                node = node[int(key)]
            else:
                return None
        return node

    # ---- checking ----------------------------------------------------------------------------

    def errors(self, value: Json) -> Errors:
        """Why ``value`` is invalid, ``[]`` when it is valid."""
        out: Errors = []
        self._walk(self.schema, value, "", out)
        return out

    def ok(self, node: Json, value: Json) -> bool:
        out: Errors = []
        self._walk(node, value, "", out)
        return not out

    def _walk(self, node: Json, v: Json, path: str, out: Errors) -> None:
        if node is True or not isinstance(node, dict):
            if node is False:
                out.append((path, "no value is allowed here"))
            return
        types = _types_of(node)
        if "type" in node and not any(_TYPE_CHECKS.get(t, _never)(v) for t in types):
            out.append((path, f"expected {' or '.join(types)}, got {type_name(v)}"))
            return
        if isinstance(node.get("enum"), list) and not any(json_equal(m, v) for m in node["enum"]):
            out.append((path, f"expected one of {_list_values(node['enum'])}"))
        if "const" in node and not json_equal(node["const"], v):
            out.append((path, f"expected {js_json(node['const'])}"))
        if isinstance(v, str):
            self._walk_string(node, v, path, out)
        elif is_number(v):
            self._walk_number(node, v, path, out)
        elif isinstance(v, dict):
            self._walk_object(node, v, path, out)
        elif isinstance(v, list):
            self._walk_array(node, v, path, out)
        for member in node.get("allOf") or []:
            self._walk(member, v, path, out)
        if isinstance(node.get("anyOf"), list):
            self._walk_union(node["anyOf"], v, path, out, exactly_one=False)
        if isinstance(node.get("oneOf"), list):
            self._walk_union(node["oneOf"], v, path, out, exactly_one=True)
        if "not" in node and self.ok(node["not"], v):
            out.append((path, "must not match the schema in not"))
        if isinstance(node.get("$ref"), str):
            target = self._resolve(node["$ref"])
            if target is None:
                out.append((path, f"unresolved reference {node['$ref']}"))
            elif self._enter(target, v):
                try:
                    self._walk(target, v, path, out)
                finally:
                    self._entered.pop()

    def _enter(self, node: Json, v: Json) -> bool:
        """Guard a ``$ref`` step against a schema that refers to itself with the same value."""
        key = (id(node), id(v))
        if key in self._entered:
            return False
        self._entered.append(key)
        return True

    @staticmethod
    def _walk_string(node: JsonObject, v: str, path: str, out: Errors) -> None:
        if isinstance(least := node.get("minLength"), int) and len(v) < least:
            out.append((path, f"expected at least {least} characters"))
        if isinstance(most := node.get("maxLength"), int) and len(v) > most:
            out.append((path, f"expected at most {most} characters"))
        if isinstance(node.get("pattern"), str) and not _regex(node["pattern"]).search(v):
            out.append((path, f"expected to match {node['pattern']}"))

    @staticmethod
    def _walk_number(node: JsonObject, v: float, path: str, out: Errors) -> None:
        bounds: list[tuple[str, Callable[[float, float], bool], str]] = [
            ("minimum", lambda x, b: x < b, ">="),
            ("maximum", lambda x, b: x > b, "<="),
            ("exclusiveMinimum", lambda x, b: x <= b, ">"),
            ("exclusiveMaximum", lambda x, b: x >= b, "<"),
        ]
        for keyword, fails, sign in bounds:
            bound = node.get(keyword)
            if is_number(bound) and fails(v, bound):
                out.append((path, f"expected {sign} {js_number_text(bound)}"))
        step = node.get("multipleOf")
        if is_number(step) and step > 0 and not _is_multiple(v, step):
            out.append((path, f"expected a multiple of {js_number_text(step)}"))

    def _walk_object(self, node: JsonObject, v: JsonObject, path: str, out: Errors) -> None:
        declared = node.get("properties") if isinstance(node.get("properties"), dict) else {}
        assert isinstance(declared, dict)
        for key in cast(Iterable[object], node.get("required") or []):
            if isinstance(key, str) and key not in v:
                out.append((_pointer(path, key), "missing"))
        for key, schema in declared.items():
            if key in v:
                self._walk(schema, v[key], _pointer(path, key), out)
        patterns = node.get("patternProperties") if isinstance(node.get("patternProperties"), dict) else {}
        assert isinstance(patterns, dict)
        additional = node.get("additionalProperties")
        for key, item in v.items():
            matched = key in declared
            for pattern, schema in patterns.items():
                if _regex(pattern).search(key):
                    matched = True
                    self._walk(schema, item, _pointer(path, key), out)
            if not matched and additional is False:
                out.append((_pointer(path, key), "unknown field"))
            elif not matched and additional is not None:
                self._walk(additional, item, _pointer(path, key), out)

    def _walk_array(self, node: JsonObject, v: list[Json], path: str, out: Errors) -> None:
        for i, item in enumerate(v):
            schema = _item_schema(node, i)
            if schema is not None:
                self._walk(schema, item, f"{path}/{i}", out)
        if isinstance(least := node.get("minItems"), int) and len(v) < least:
            out.append((path, f"expected at least {least} items"))
        if isinstance(most := node.get("maxItems"), int) and len(v) > most:
            out.append((path, f"expected at most {most} items"))
        if node.get("uniqueItems") is True and any(
            json_equal(v[i], v[j]) for i in range(len(v)) for j in range(i + 1, len(v))
        ):
            out.append((path, "expected unique items"))

    def _walk_union(self, branches: list[Json], v: Json, path: str, out: Errors, exactly_one: bool) -> None:
        matches = sum(1 for b in branches if self.ok(b, v))
        if matches == 1 or (matches > 1 and not exactly_one):
            return
        if matches > 1:
            out.append((path, "matches more than one alternative"))
            return
        # Blame the branch declaring most of an object's keys, then the one whose first error is deepest.
        best: tuple[int, Errors] | None = None
        for branch in branches:
            errors: Errors = []
            self._walk(branch, v, path, errors)
            if not errors:
                continue
            declared = self._declared_keys(branch, v) if isinstance(v, dict) else 0
            if best is None or declared > best[0] or (
                declared == best[0] and len(errors[0][0]) > len(best[1][0][0])
            ):
                best = (declared, errors)
        out.extend(best[1] if best else [(path, "matches no alternative")])

    def _declared_keys(self, branch: Json, v: JsonObject) -> int:
        if isinstance(branch, dict) and isinstance(branch.get("$ref"), str):
            branch = self._resolve(branch["$ref"])
        props = branch.get("properties") if isinstance(branch, dict) else None
        return sum(1 for k in v if k in props) if isinstance(props, dict) else 0

    # ---- coercion ----------------------------------------------------------------------------

    def coerce(self, value: Json) -> Json:
        """``value`` coerced towards the schema; changed paths are copies, the rest is shared."""
        return self._coerce_types(self._convert(self.schema, self._drop_optional_nulls(value, self.schema)),
                                  self.schema)

    def _drop_optional_nulls(self, v: Json, node: Json) -> Json:
        """Pass 1: ``null`` in an optional property whose schema rejects null counts as omitted."""
        if not isinstance(node, dict):
            return v
        if isinstance(v, list):
            return _map_items(v, lambda item, i: self._drop_optional_nulls(item, _item_schema(node, i)))
        if not isinstance(v, dict):
            return v
        required = set(node.get("required") or [])

        def optional_null(key: str, item: Json, declared: JsonObject) -> bool:
            schema = declared.get(key)
            return (key in declared and item is None and key not in required
                    and not (isinstance(schema, dict) and "$ref" in schema)
                    and not self.ok(schema, None))

        return _map_members(v, node, self._drop_optional_nulls, optional_null)

    def _convert(self, node: Json, v: Json) -> Json:
        """Pass 2: conversions keyed on the schema's first applicable keyword."""
        if not isinstance(node, dict):
            return v
        if isinstance(node.get("$ref"), str):
            target = self._resolve(node["$ref"])
            if target is None or not self._enter(target, v):
                return v
            try:
                return self._convert(target, v)
            finally:
                self._entered.pop()
        if "const" in node:
            return convert_literal(node["const"], v)
        if isinstance(node.get("enum"), list):
            return self._convert_enum(node, v)
        for union in ("anyOf", "oneOf"):
            if isinstance(node.get(union), list):
                return self._convert_union(node, node[union], v)
        if isinstance(node.get("allOf"), list):
            for member in node["allOf"]:
                v = self._convert(member, v)
            return self._convert_members(node, v)
        kind = node.get("type")
        if kind == "integer":
            result = try_number(v)
            return v if result is None else math.trunc(result[0])
        if isinstance(kind, str) and kind in CONVERTERS:
            converted = CONVERTERS[kind](v)
            return v if converted is None else converted[0]
        if kind == "array" or (kind is None and ("items" in node or "prefixItems" in node)):
            return self._convert_array(node, v)
        if kind == "object" or (kind is None and ("properties" in node or "patternProperties" in node)):
            return self._convert_object(node, v)
        return v

    def _convert_enum(self, node: JsonObject, v: Json) -> Json:
        members = cast(list[Json], node["enum"])
        if any(json_equal(member, v) for member in members):
            return v
        for member in members:
            candidate = convert_literal(member, v)
            if candidate is not v and self.ok(node, candidate):
                return candidate
        return v

    def _convert_union(self, node: JsonObject, branches: list[Json], v: Json) -> Json:
        if any(self.ok(b, v) for b in branches):
            return self._convert_members(node, v)
        for branch in branches:
            candidate = self._convert_members(node, self._convert(branch, v))
            if self.ok(node, candidate):
                return candidate
        return self._convert_members(node, v)

    def _convert_members(self, node: JsonObject, v: Json) -> Json:
        if any(k in node for k in ("properties", "patternProperties", "additionalProperties")):
            return self._convert_object(node, v)
        return v

    def _convert_array(self, node: JsonObject, v: Json) -> Json:
        if isinstance(node.get("items"), list) or isinstance(node.get("prefixItems"), list):
            # A tuple converts its items and never wraps a single value.
            if not isinstance(v, list):
                return v
            return _map_items(v, lambda item, i: self._convert_item(_item_schema(node, i), item))
        if isinstance(v, list):
            return _map_items(v, lambda item, i: self._convert_item(node.get("items"), item))
        item_schema = node.get("items")
        if not isinstance(item_schema, dict) or not self._enter(item_schema, v):
            return [v]
        try:
            return [self._convert(item_schema, v)]
        finally:
            self._entered.pop()

    def _convert_item(self, schema: Json, item: Json) -> Json:
        return item if schema is None else self._convert(schema, item)

    def _convert_object(self, node: JsonObject, v: Json) -> Json:
        if not isinstance(v, dict):
            return v
        return _map_members(v, node, lambda item, schema: self._convert(schema, item))

    def _coerce_types(self, v: Json, node: Json) -> Json:
        """Pass 3: primitive coercion by ``type`` (type lists), then into members."""
        if not isinstance(node, dict):
            return v
        for member in node.get("allOf") or []:
            v = self._coerce_types(v, member)
        for union in ("anyOf", "oneOf"):
            if isinstance(node.get(union), list):
                v = self._coerce_union(v, node[union])
        types = _types_of(node)
        if types and not (len(types) > 1 and any(_TYPE_CHECKS.get(t, _never)(v) for t in types)):
            for kind in types:
                candidate = coerce_primitive(v, kind)
                if candidate is not v:
                    v = candidate
                    break
        if "object" in types and isinstance(v, dict):
            declared = node.get("properties") if isinstance(node.get("properties"), dict) else {}
            assert isinstance(declared, dict)
            out: JsonObject | None = None
            for key, item in v.items():
                new = item
                for schema in _member_schemas(node, key, declared):
                    new = self._coerce_types(new, schema)
                if new is not item:
                    out = dict(v) if out is None else out
                    out[key] = new
            v = v if out is None else out
        if "array" in types and isinstance(v, list):
            v = _map_items(v, lambda item, i: self._coerce_item(_item_schema(node, i), item))
        return v

    def _coerce_item(self, schema: Json, item: Json) -> Json:
        return self._coerce_types(item, schema) if isinstance(schema, dict) else item

    def _coerce_union(self, v: Json, branches: list[Json]) -> Json:
        if any(self.ok(b, v) for b in branches):
            return v
        for branch in branches:
            coerced = self._coerce_types(v, branch)
            if self.ok(branch, coerced):
                return coerced
        return v


def _is_multiple(v: float, step: float) -> bool:
    quotient = v / step
    return abs(quotient - round(quotient)) < 1e-9


def _list_values(values: list[Json], limit: int = 20) -> str:
    if len(values) <= limit:
        return js_json(values)
    return f"{js_json(values[:limit])[:-1]}, ... and {len(values) - limit} more]"
