"""The tool and effort switches of ``compat`` (models.json) on the OpenAI APIs.

``supportsAdditionalTools`` and ``supportsMidConvoEffort`` on Responses and Codex: with mid-conversation
system messages the tools lead the input as an ``additional_tools`` item (no top-level ``tools``), and
thinking levels travel as ``configuration_update`` items while ``reasoning.effort`` stays fixed.
``supportsStrictMode``: tools that prefer strict schemas are sent strict. Ours alone, then the request
bodies side by side with pi 1.6.0."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.reference.test_codex_reference import run_prompts
from tests.support.fakes.llm_server import FakeLLMServer
from tests.support.rpc_compare import Conversation, Workspace, needs_reference

ALL = {"supportsMidConvoSystemMessages": True, "supportsAdditionalTools": True, "supportsMidConvoEffort": True,
       "supportsStrictMode": True}
CASES = {"all": ALL, "no effort": {**ALL, "supportsMidConvoEffort": False},
         "top-level": {**ALL, "supportsMidConvoSystemMessages": False}}


async def _requests(kind: str, root: Path, compat: dict[str, Any], api: str = "openai-responses",
                    before: tuple[dict[str, Any], ...] = ()) -> list[dict[str, Any]]:
    """Two turns of a reasoning model, the thinking level raised in between (``before``: responses
    served ahead of the two answers)."""
    with FakeLLMServer() as server:
        server.add(*before, {"content": [{"type": "text", "text": "one"}]}, {"content": [{"type": "text", "text": "two"}]})
        workspace = Workspace.create(root / kind, server.url)
        models = json.loads((workspace.agent_dir / "models.json").read_text())
        provider = models["providers"]["fake"]
        provider["api"] = api
        provider["models"][0].update(reasoning=True, compat=compat)
        (workspace.agent_dir / "models.json").write_text(json.dumps(models))
        proc = await workspace.spawn(kind, "--no-session", "--thinking", "low")
        conv = Conversation(proc, server, workspace)
        try:
            await conv.prompt("first")
            await conv.request({"type": "set_thinking_level", "level": "high"})
            await conv.prompt("second")
        finally:
            await proc.kill()
        return [request["body"] for request in server.requests]


def _bare(schema: Any) -> Any:
    """A schema without its descriptions (ours are worded differently on purpose)."""
    if isinstance(schema, dict):
        return {key: _bare(value) for key, value in schema.items() if key != "description"}
    return [_bare(value) for value in schema] if isinstance(schema, list) else schema


def _shape(body: dict[str, Any]) -> dict[str, Any]:
    """Input item kinds in order, the tools of each ``additional_tools`` item, the efforts sent."""
    items = body["input"]
    return {"items": [item.get("type", item.get("role")) if "role" not in item or item.get("type") != "message"
                      else item["role"] for item in items],
            "additional": [[(t["name"], t.get("strict", "-"), _bare(t["parameters"])) for t in item["tools"]]
                           for item in items if item.get("type") == "additional_tools"],
            "tools": [(t["name"], t.get("strict", "-")) for t in body.get("tools", [])],
            "updates": [item["reasoning"] for item in items if item.get("type") == "configuration_update"],
            "reasoning": body.get("reasoning")}


@pytest.mark.slow
async def test_tools_and_efforts_travel_in_the_input(tmp_path: Path) -> None:
    first, second = (_shape(body) for body in await _requests("ours", tmp_path, ALL))
    assert first["tools"] == [] and len(first["additional"]) == 1
    assert [name for name, _, _ in first["additional"][0]] == ["read", "bash", "edit", "write"]
    assert {strict for _, strict, _ in first["additional"][0]} == {True}  # built-ins prefer strict schemas
    assert first["items"] == ["additional_tools", "developer", "user", "configuration_update"]
    assert first["reasoning"] == second["reasoning"] == {"effort": "medium", "summary": "auto"}
    assert first["updates"] == [{"effort": "low"}]
    # the first answer recorded its level and replays it; this turn's level closes the input
    assert second["items"][-4:] == ["configuration_update", "assistant", "user", "configuration_update"]
    assert second["updates"] == [{"effort": "low"}, {"effort": "high"}]


@pytest.mark.slow
async def test_without_in_place_system_messages_tools_stay_top_level(tmp_path: Path) -> None:
    first = _shape((await _requests("ours", tmp_path, CASES["top-level"]))[0])
    assert first["additional"] == [] and [name for name, _ in first["tools"]] == ["read", "bash", "edit", "write"]


@needs_reference
@pytest.mark.parametrize("case", list(CASES))
async def test_additional_tools_and_effort_updates_match_reference(case: str, tmp_path: Path) -> None:
    ours = await _requests("ours", tmp_path, CASES[case])
    reference = await _requests("reference", tmp_path, CASES[case])
    assert [_shape(body) for body in ours] == [_shape(body) for body in reference]


def _codex_bodies(kind: str, home: Path, server: FakeLLMServer) -> list[dict[str, Any]]:
    """Two turns of gpt-6-luna (additional tools, efforts as updates) over Codex SSE at thinking low."""
    seen = len(server.requests)
    server.add({"content": [{"type": "text", "text": "a"}]}, {"content": [{"type": "text", "text": "b"}]})
    run_prompts(kind, home, f"{server.url}/backend-api", ["hi", "again"], {"transport": "sse"}, "gpt-6-luna",
                "--thinking", "low")
    return [request["body"] for request in server.requests[seen:]]


def test_codex_declares_tools_in_the_input_with_null_strictness(tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    first, second = (_shape(body) for body in _codex_bodies("ours", tmp_path, fake_llm))
    assert first["tools"] == [] and first["items"][:2] == ["additional_tools", "developer"]
    assert {strict for _, strict, _ in first["additional"][0]} == {True}  # built-ins prefer strict schemas
    assert first["reasoning"] == {"effort": "medium", "summary": "auto"}
    assert second["updates"] == [{"effort": "low"}, {"effort": "low"}]


@needs_reference
@pytest.mark.timeout(180)
def test_codex_additional_tools_match_reference(tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    ours = _codex_bodies("ours", tmp_path / "ours", fake_llm)
    reference = _codex_bodies("reference", tmp_path / "reference", fake_llm)
    assert [_shape(body) for body in ours] == [_shape(body) for body in reference]


def test_tools_without_constrained_sampling_keep_their_schema() -> None:
    from pi_coding_agent.ai.apis.responses_tools import convert_tools

    plain = {"name": "t", "description": "d", "parameters": {"type": "object", "properties": {"x": {"type": "string"}}}}
    assert convert_tools([plain], True, None) == [{"type": "function", "name": "t", "description": "d",
                                                  "parameters": plain["parameters"], "strict": None}]
    assert convert_tools([plain], False, False)[0].keys() == {"type", "name", "description", "parameters"}


def _completions_tools(body: dict[str, Any]) -> list[Any]:
    return [(t["function"]["name"], t["function"].get("strict", "-"), _bare(t["function"]["parameters"]))
            for t in body["tools"]]


@pytest.mark.slow
async def test_chat_completions_tools_go_strict_where_the_host_takes_it(tmp_path: Path) -> None:
    strict = await _requests("ours", tmp_path / "strict", {"supportsStrictMode": True}, "openai-completions")
    plain = await _requests("ours", tmp_path / "plain", {}, "openai-completions")
    tools = _completions_tools(strict[0])
    assert {flag for _, flag, _ in tools} == {True}
    assert all(params["additionalProperties"] is False for _, _, params in tools)
    assert {flag for _, flag, _ in _completions_tools(plain[0])} == {"-"}


def _anthropic_tools(body: dict[str, Any]) -> list[Any]:
    return [(t["name"], t.get("strict", "-"), _bare(t["input_schema"])) for t in body["tools"]]


@pytest.mark.slow
async def test_anthropic_tools_go_strict_with_supports_strict_tools(tmp_path: Path) -> None:
    strict = await _requests("ours", tmp_path / "s", {"supportsStrictTools": True}, "anthropic-messages")
    tools = _anthropic_tools(strict[0])
    assert {flag for _, flag, _ in tools} == {True}
    assert all(schema["additionalProperties"] is False for _, _, schema in tools)
    plain = await _requests("ours", tmp_path / "p", {}, "anthropic-messages")
    assert {flag for _, flag, _ in _anthropic_tools(plain[0])} == {"-"}


@pytest.mark.slow
async def test_anthropic_strict_limit_refusal_is_sent_again_plain(tmp_path: Path) -> None:
    refusal = {"status": 400, "errorMessage": "Too many strict tools (24). The maximum number of strict tools is 20."}
    requests = await _requests("ours", tmp_path, {"supportsStrictTools": True}, "anthropic-messages", (refusal,))
    # sent again plain, and the session remembers: no strict attempt on the second turn
    flags = [{t.get("strict", "-") for t in body["tools"]} for body in requests]
    assert flags == [{True}, {"-"}, {"-"}]


STRICT_CASES = {"completions strict": ("openai-completions", {"supportsStrictMode": True}, _completions_tools),
                "completions plain": ("openai-completions", {}, _completions_tools),
                "anthropic strict": ("anthropic-messages", {"supportsStrictTools": True}, _anthropic_tools),
                "anthropic plain": ("anthropic-messages", {}, _anthropic_tools)}


@needs_reference
@pytest.mark.parametrize("case", list(STRICT_CASES))
async def test_strict_tools_match_reference(case: str, tmp_path: Path) -> None:
    api, compat, tools = STRICT_CASES[case]
    ours = await _requests("ours", tmp_path, compat, api)
    reference = await _requests("reference", tmp_path, compat, api)
    assert tools(ours[0]) == tools(reference[0])
