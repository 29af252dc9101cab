"""Tool-argument validation: coercions and error texts as pi 1.6.0 produces them.

The expected values were captured by running pi 1.6.0's own ``validateToolArguments`` on the same
schemas and arguments.
"""

from __future__ import annotations

from typing import Any

import pytest

from pi_coding_agent.agent.validation import (
    SchemaValidator,
    ToolArgumentsError,
    format_path,
    validate_tool_arguments,
)

EDIT = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "edits": {"type": "array", "items": {
            "type": "object", "properties": {"oldText": {"type": "string"}, "newText": {"type": "string"}},
            "required": ["oldText", "newText"], "additionalProperties": False}},
        "count": {"type": "integer", "minimum": 1, "maximum": 5},
        "mode": {"type": "string", "enum": ["a", "b"]},
        "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2},
    },
    "required": ["path", "edits"],
    "additionalProperties": False,
}


def prop(schema: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": {"a": schema}}
    if required:
        out["required"] = required
    return out


def validate(schema: dict[str, Any], args: Any) -> Any:
    return validate_tool_arguments("t", schema, {"type": "toolCall", "id": "1", "name": "t", "arguments": args})


def errors_of(schema: dict[str, Any], args: Any) -> list[str]:
    with pytest.raises(ToolArgumentsError) as err:
        validate(schema, args)
    text = str(err.value)
    head, _, _ = text.partition("\n\nReceived arguments:\n")
    return head.split("\n")[1:]


@pytest.mark.parametrize(("schema", "args", "coerced"), [
    (EDIT, {"path": 5, "edits": []}, {"path": "5", "edits": []}),
    (EDIT, {"path": "x", "edits": [], "count": "3"}, {"path": "x", "edits": [], "count": 3}),
    (EDIT, {"path": "x", "edits": {"oldText": "a", "newText": "b"}},
     {"path": "x", "edits": [{"oldText": "a", "newText": "b"}]}),
    (EDIT, {"path": "x", "edits": [], "count": None}, {"path": "x", "edits": []}),
    (EDIT, {"path": None, "edits": []}, {"path": "null", "edits": []}),
    (EDIT, {"path": "x", "edits": [], "count": 2.5}, {"path": "x", "edits": [], "count": 2}),
    (EDIT, {"path": True, "edits": []}, {"path": "true", "edits": []}),
    (EDIT, {"path": "x", "edits": [], "tags": ["a", 3]}, {"path": "x", "edits": [], "tags": ["a", "3"]}),
    (prop({"type": "number"}), {"a": "1e3"}, {"a": 1000}),
    (prop({"type": "number"}), {"a": " 0x10 "}, {"a": 16}),
    (prop({"type": "number"}), {"a": "12n"}, {"a": 12}),
    (prop({"type": "boolean"}), {"a": "TRUE"}, {"a": True}),
    (prop({"type": ["integer", "null"]}), {"a": "7"}, {"a": 7}),
    (prop({"type": ["integer", "null"]}), {"a": ""}, {"a": None}),
    (prop({"type": "string"}, ["a"]), {"a": None}, {"a": "null"}),
    (prop({"enum": [1, 2, "x"]}), {"a": "2"}, {"a": 2}),
    (prop({"type": "integer"}), {"a": 1.0}, {"a": 1}),
    (prop({"type": "number"}), {"a": 1.5e300, "b": "é"}, {"a": 1.5e300, "b": "é"}),
])
def test_coercions(schema, args, coerced):
    assert validate(schema, args) == coerced


@pytest.mark.parametrize(("schema", "args", "expected"), [
    (EDIT, {}, ["  - path: missing", "  - edits: missing"]),
    (EDIT, {"path": "x", "edits": [{"oldText": 1}]}, ["  - edits.0.newText: missing"]),
    (EDIT, {"path": "x", "edits": [], "extra": 1}, ["  - extra: unknown field"]),
    (EDIT, {"path": "x", "edits": [], "count": "abc"}, ["  - count: expected integer, got string"]),
    (EDIT, {"path": "x", "edits": [], "count": 9}, ["  - count: expected <= 5"]),
    (EDIT, {"path": "x", "edits": [], "mode": "c"}, ['  - mode: expected one of ["a","b"]']),
    (EDIT, {"path": "x", "edits": [], "tags": "one"}, ["  - tags: expected at least 2 items"]),
    (prop({"anyOf": [{"type": "string"}, {"type": "integer"}]}), {"a": [1]}, ["  - a: expected string, got array"]),
    (prop({"anyOf": [
        {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]},
        {"type": "object", "properties": {"y": {"type": "integer"}}, "required": ["y"]},
    ]}), {"a": {"y": "z"}}, ["  - a.y: expected integer, got string"]),
    (prop({"const": "x"}), {"a": "y"}, ['  - a: expected "x"']),
    (prop({"type": "boolean"}), {"a": "yes"}, ["  - a: expected boolean, got string"]),
    (prop({"type": "string", "minLength": 3, "pattern": "^a"}), {"a": "bc"},
     ["  - a: expected at least 3 characters", "  - a: expected to match ^a"]),
    (prop({"type": "number", "exclusiveMinimum": 0, "multipleOf": 0.5}), {"a": 0}, ["  - a: expected > 0"]),
    (prop({"type": "array", "items": {"type": "integer"}}), {"a": ["1", "x", 2.5]},
     ["  - a.1: expected integer, got string"]),
    (prop({"type": "object", "properties": {"b": {"type": "integer"}}, "additionalProperties": {"type": "string"}}),
     {"a": {"b": 1, "c": 2, "d": [1]}}, ["  - a.d: expected string, got array"]),
    ({"type": "object", "properties": {"a/b": {"type": "integer"}}}, {"a/b": "x"},
     ["  - a/b: expected integer, got string"]),
    (prop({"oneOf": [{"type": "number"}, {"type": "integer"}]}), {"a": 1}, ["  - a: matches more than one alternative"]),
    ({"type": "object", "required": ["a"]}, "str", ["  - root: expected object, got string"]),
    (prop({"type": "string"}), {"a": {}}, ["  - a: expected string, got object"]),
])
def test_error_lines(schema, args, expected):
    assert errors_of(schema, args) == expected


def test_full_message_shows_the_arguments_as_received():
    with pytest.raises(ToolArgumentsError) as err:
        validate_tool_arguments("edit", EDIT, {"name": "edit", "arguments": {"path": "x", "edits": [], "count": 9.0}})
    assert str(err.value) == (
        'Validation failed for tool "edit":\n  - count: expected <= 5\n\nReceived arguments:\n'
        '{\n  "path": "x",\n  "edits": [],\n  "count": 9\n}'
    )


def test_unparsable_arguments_are_reported_as_such():
    with pytest.raises(ToolArgumentsError, match=r'^Invalid arguments for tool "t": Unexpected end of JSON$'):
        validate_tool_arguments("t", EDIT, {"name": "t", "arguments": {}, "argumentsError": "Unexpected end of JSON"})


def test_input_is_never_modified():
    args = {"path": 5, "edits": {"oldText": 1, "newText": "b"}}
    validate(EDIT, args)
    assert args == {"path": 5, "edits": {"oldText": 1, "newText": "b"}}


def test_local_references_and_recursion():
    schema = {
        "type": "object",
        "properties": {"tree": {"$ref": "#/$defs/node"}},
        "$defs": {"node": {"type": "object", "properties": {
            "name": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
            "required": ["name"]}},
    }
    assert validate(schema, {"tree": {"name": 1, "children": [{"name": "x"}]}}) == {
        "tree": {"name": "1", "children": [{"name": "x"}]}}
    assert errors_of(schema, {"tree": {"children": [{}]}}) == ["  - tree.name: missing", "  - tree.children.0.name: missing"]
    assert errors_of({"$ref": "#/$defs/none"}, {}) == ["  - root: unresolved reference #/$defs/none"]


def test_format_path():
    assert format_path("") == "root"
    assert format_path("/edits/0/oldText") == "edits.0.oldText"
    assert format_path("/a~1b/c~0d") == "a/b.c~d"


def test_validator_reports_nothing_for_valid_values():
    assert SchemaValidator(EDIT).errors({"path": "x", "edits": [{"oldText": "a", "newText": "b"}], "mode": "a"}) == []
