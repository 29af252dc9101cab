"""Tool declarations and the codemode catalog, rendered by ours and by the reference pi's own modules."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pi_coding_agent.coding.codemode.declarations import sample, to_identifier
from pi_coding_agent.coding.codemode.host import (
    BASH_OUTPUT_SCHEMA,
    READ_OUTPUT_SCHEMA,
    CatalogTool,
    Namespace,
)
from pi_coding_agent.coding.codemode.tool import describe
from pi_coding_agent.coding.tools.base import ToolEnv
from pi_coding_agent.coding.tools.builtin import create_builtin_tools
from tests.support.reference_pi import REFERENCE_NODE_BIN, REFERENCE_ROOT

SCRIPT = Path(__file__).parents[2] / "support" / "fakes" / "reference_codemode_declarations.mjs"
needs_reference = pytest.mark.reference  # skipped, with the reason, without it (tests/conftest.py)

MCP_LIKE: list[dict[str, Any]] = [
    {"name": "mcp__dev-radius__search", "description": "Search the docs.\nSecond line.", "namespace": "dev-radius",
     "parameters": {"type": "object", "required": ["query"], "properties": {
         "query": {"type": "string", "description": "What to find", "minLength": 2, "maxLength": 200},
         "limit": {"anyOf": [{"type": "integer", "minimum": 1, "maximum": 50}, {"type": "null"}], "default": 10},
         "kind": {"enum": ["page", "api"]}, "tags": {"type": "array", "items": {"type": "string"},
                                                     "uniqueItems": True},
         "filter": {"$ref": "#/$defs/Filter"}},
         "$defs": {"Filter": {"type": "object", "properties": {"since": {"type": "string", "format": "date"}}}}},
     "outputSchema": {"type": "object", "properties": {"content": {"type": "array"},
                                                       "structuredContent": {"type": "object", "properties": {
                                                           "results": {"type": "array"}}}},
                      "required": ["content"]}},
    {"name": "mcp__dev-radius__fetch", "description": "Fetch one page.", "namespace": "dev-radius",
     "parameters": {"type": "object", "properties": {"url": {"type": "string"}, "raw": {"type": "boolean"},
                                                     "headers": {"type": "object",
                                                                 "additionalProperties": {"type": "string"}}}}},
    {"name": "mcp__zeta__ping", "description": "Ping.", "namespace": "zeta", "parameters": {"type": "object"}},
    {"name": "mcp__zeta__later", "description": "Deferred.", "namespace": "zeta", "exposure": "deferred",
     "parameters": {"type": "object", "properties": {}}},
]


def _inputs() -> list[dict[str, Any]]:
    builtin = create_builtin_tools(ToolEnv(cwd=Path.cwd()))
    outputs = {"bash": BASH_OUTPUT_SCHEMA, "read": READ_OUTPUT_SCHEMA}
    tools = [{"name": t.name, "description": t.description, "parameters": t.parameters,
              **({"outputSchema": outputs[t.name]} if t.name in outputs else {})} for t in builtin.values()]
    return tools + MCP_LIKE


def _catalog(tools: list[dict[str, Any]]) -> list[CatalogTool]:
    return [CatalogTool(t["name"], t["description"], t["parameters"], t.get("outputSchema"),
                        Namespace(t["namespace"]) if "namespace" in t else None,
                        t.get("exposure", "codemode" if "namespace" in t else "direct")) for t in tools]


def _reference(tools: list[dict[str, Any]], budget: int) -> dict[str, Any]:
    env = {**os.environ, "PATH": f"{REFERENCE_NODE_BIN}:{os.environ['PATH']}"}
    root = str(REFERENCE_ROOT / "pi-1.6.0" / "node_modules")
    done = subprocess.run(["node", str(SCRIPT), root, json.dumps({"budget": budget, "tools": tools})],
                          capture_output=True, text=True, env=env, timeout=60, check=True)
    parsed: dict[str, Any] = json.loads(done.stdout)
    return parsed


def _nested(tools: list[CatalogTool], budget: int) -> str:
    text = describe(tools, budget, "only")
    return text[text.index("Nested tools:"):] if "Nested tools:" in text else ""


@needs_reference
@pytest.mark.parametrize("budget", [3000, 600, 0])
def test_samples_and_catalog_match_the_reference(budget: int) -> None:
    tools = _inputs()
    reference = _reference(tools, budget)
    catalog = _catalog(tools)
    assert [sample(t) for t in catalog] == reference["samples"]
    assert _nested(catalog, budget) == reference["nested"]


def test_mode_on_lists_only_tools_that_are_not_declared() -> None:
    catalog = _catalog(_inputs())
    text = describe(catalog, 3000, "on")
    assert "### `bash`" not in text and "## dev-radius" in text
    assert "### `mcp__dev_radius__search` (`mcp__dev-radius__search`)" in text
    assert "later" not in text  # deferred tools are never listed


def test_identifiers() -> None:
    assert to_identifier("mcp__dev-radius__search") == "mcp__dev_radius__search"
    assert to_identifier("9lives") == "_lives" and to_identifier("") == "_" and to_identifier("a.b$c") == "a_b$c"
