"""Strict tool schemas on Bedrock and pi's fallback when Claude refuses them for its strict-tool limits."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pi_coding_agent.ai.apis import strict_schema
from pi_coding_agent.ai.models.catalog import builtin_models
from pi_coding_agent.ai.stream import StreamOptions, stream
from pi_coding_agent.ai.types import Model
from tests.support.reference_pi import REFERENCE_NODE_BIN, REFERENCE_ROOT

CLAUDE = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
USER = {"role": "user", "content": "hi", "timestamp": 0}
PREFER = {"type": "json_schema", "strict": "prefer"}
READ = {"type": "object", "required": ["path"], "properties": {
    "path": {"type": "string"}, "limit": {"type": "number", "description": "lines"}}}
TOO_MANY = {"status": 400, "body": {"message": "Too many strict tools (24). The maximum number of strict tools is 20."},
            "headers": {"x-amzn-ErrorType": "ValidationException:http://internal.amazon.com/coral/"}}
OK = {"content": [{"type": "text", "text": "fine"}]}


@pytest.fixture(autouse=True)
def bedrock_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "bedrock-key")
    strict_schema._over_limits.clear()


def _model(url: str, strict: bool = True) -> Model:
    catalog = next(m for m in builtin_models("amazon-bedrock") if m["id"] == CLAUDE)
    return {**catalog, "baseUrl": url, "compat": {"supportsStrictMode": strict}}  # type: ignore[typeddict-item]


def _tools(*sampling: dict[str, str] | None) -> list[dict[str, Any]]:
    return [{"name": f"t{i}", "description": "d", "parameters": READ, **({"constrainedSampling": s} if s else {})}
            for i, s in enumerate(sampling)]


async def _run(model: Model, tools: list[dict[str, Any]], **opts: Any) -> Any:
    s = stream(model, {"messages": [USER], "tools": tools}, StreamOptions(**opts))  # type: ignore[typeddict-item]
    async for _ in s:
        pass
    return await s.result()


def _specs(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [t["toolSpec"] for t in request["body"]["toolConfig"]["tools"]]


async def test_strict_limit_refusal_is_sent_again_with_preferring_tools_plain(fake_llm) -> None:
    fake_llm.add(TOO_MANY, OK, OK)
    tools = _tools(PREFER, None, {"type": "json_schema", "strict": "require"})
    msg = await _run(_model(fake_llm.url), tools, session_id="sess-b")
    assert msg["content"][0]["text"] == "fine", msg.get("errorMessage")
    first, second = (_specs(r) for r in fake_llm.requests)
    assert [s.get("strict") for s in first] == [True, None, True]
    assert first[0]["inputSchema"]["json"] == strict_schema.make_strict(READ)
    assert [s.get("strict") for s in second] == [None, None, True]  # a required strict tool stays strict
    assert second[0]["inputSchema"]["json"] == READ
    (diagnostic,) = msg["diagnostics"]
    assert diagnostic["type"] == "bedrock_strict_tools_fallback"
    assert diagnostic["details"] == {"reason": "strict_tool_limits_exceeded"}
    assert "Too many strict tools (24)" in diagnostic["error"]["message"]
    await _run(_model(fake_llm.url), tools, session_id="sess-b")  # the session remembers: one request
    assert len(fake_llm.requests) == 3 and _specs(fake_llm.requests[2])[0].get("strict") is None


async def test_other_validation_errors_and_plain_tools_are_not_retried(fake_llm) -> None:
    other = {**TOO_MANY, "body": {"message": "The provided model identifier is invalid."}}
    fake_llm.add(other, TOO_MANY)
    first = await _run(_model(fake_llm.url), _tools(PREFER), session_id="s1")
    assert first["errorMessage"] == "Validation error: The provided model identifier is invalid."
    second = await _run(_model(fake_llm.url), _tools({"type": "json_schema", "strict": "require"}))
    assert second["errorMessage"].startswith("Validation error: Too many strict tools (24)")
    assert len(fake_llm.requests) == 2 and not strict_schema.over_limits("s1")


async def test_models_without_strict_support_send_plain_schemas(fake_llm) -> None:
    fake_llm.add(OK)
    await _run(_model(fake_llm.url, strict=False), _tools(PREFER))
    assert _specs(fake_llm.requests[0]) == [{"name": "t0", "description": "d", "inputSchema": {"json": READ}}]


SCHEMAS = [
    READ,
    {"type": "object", "properties": {"edits": {"type": "array", "items": {"type": "object", "required": ["a"],
                                                                           "properties": {"a": {"type": "string"},
                                                                                          "b": {"type": "integer"}}}}}},
    {"type": "object", "properties": {"mode": {"enum": ["a", "b", None]}, "n": {"anyOf": [{"type": "string"},
                                                                                         {"type": "number"}]}}},
    {"type": "object", "properties": {"x": {"$ref": "#/defs/x"}}},
    {"type": "object", "properties": {"x": {"type": "object", "additionalProperties": True}}},
    {"type": "object", "properties": {"u": {"anyOf": [{"type": "object"}, {"type": "string"}]}}},
    {"type": "object", "required": ["ghost"], "properties": {}},
    {"type": "array"},
]


def _ours(schema: dict[str, Any]) -> Any:
    try:
        return strict_schema.make_strict(schema)
    except strict_schema.UnsupportedStrictSchema as exc:
        return {"error": str(exc)}


@pytest.mark.reference
def test_strict_schema_rewrite_matches_the_reference(tmp_path: Path) -> None:
    module = next(REFERENCE_ROOT.glob("pi-1.6.0/node_modules/@earendil-works/pi-ai/dist/api/constrained-sampling.js"))
    script = tmp_path / "strict.mjs"
    script.write_text(f"import {{ makeStrictJsonSchema }} from {json.dumps(str(module))};\n"
                      "const schemas = JSON.parse(process.argv[2]);\n"
                      "console.log(JSON.stringify(schemas.map((s) => { try { return makeStrictJsonSchema(s); }"
                      " catch (e) { return { error: e.message }; } })));\n")
    done = subprocess.run([str(REFERENCE_NODE_BIN / "node"), str(script), json.dumps(SCHEMAS)], capture_output=True,
                          text=True, timeout=60, check=True)
    theirs = json.loads(done.stdout)
    assert [_ours(s) for s in SCHEMAS] == theirs
    assert sum("error" in t for t in theirs) == 5  # both the rewrites and the refusals are compared
