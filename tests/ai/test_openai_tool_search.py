"""``compat.supportsToolSearch`` on the Responses APIs: with mid-conversation system messages but no
``additional_tools`` items, a tool added later is declared where it was added, as the answer of a
client-executed tool search (``tool_search_call`` + ``tool_search_output`` with ``defer_loading`` tools),
and every later request replays the same pair; a removal folds the tool set back into the top-level
list. An extension widens or narrows the tools between prompts (as in ``test_mid_convo_system``). Ours
alone through ``pi --mode rpc`` and through the Azure and Codex request builders, then the request
bodies side by side with pi 1.6.0.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pi_coding_agent.ai.apis import azure_openai, openai_codex
from pi_coding_agent.ai.models.catalog import builtin_models
from pi_coding_agent.ai.stream import StreamOptions, stream
from pi_coding_agent.ai.types import Model
from tests.ai.test_compat_tools import _bare
from tests.ai.test_mid_convo_system import requests_around
from tests.support.fakes.llm_server import FakeLLMServer
from tests.support.rpc_compare import needs_reference

SEARCH = {"supportsMidConvoSystemMessages": True, "supportsToolSearch": True}
SEARCH_ITEMS = ("tool_search_call", "tool_search_output")


async def _bodies(kind: str, root: Path, compat: dict[str, Any], command: str) -> list[dict[str, Any]]:
    """Three prompts, ``/<command>`` after the first: every request body."""
    return await requests_around(kind, root, compat, command, "openai-responses", later=2)


def _shape(body: dict[str, Any]) -> dict[str, Any]:
    """The top-level tool names, the input item kinds in order, the tool search items."""
    items = body["input"]
    return {"top": [tool["name"] for tool in body.get("tools", [])],
            "items": [item.get("type") or item["role"] for item in items],
            "search": [_bare(item) for item in items if item.get("type") in SEARCH_ITEMS]}


@pytest.mark.slow
async def test_tools_added_later_arrive_as_a_tool_search_result(tmp_path: Path) -> None:
    first, second, third = (_shape(body) for body in await _bodies("ours", tmp_path, SEARCH, "widen"))
    assert first["top"] == second["top"] == ["read", "bash", "edit", "write"] and first["search"] == []
    assert second["items"] == ["system", "user", "message", *SEARCH_ITEMS, "system", "user"]
    call, output = second["search"]
    assert call == {"type": "tool_search_call", "call_id": call["call_id"], "execution": "client",
                    "status": "completed", "arguments": {"query": "grep", "limit": 1}}
    assert call["call_id"].startswith("pi_tool_load_") and output["call_id"] == call["call_id"]
    assert [(t["name"], t["type"], t["defer_loading"]) for t in output["tools"]] == [("grep", "function", True)]
    assert output["tools"][0].keys() == {"type", "name", "parameters", "defer_loading"}  # no strict mode here
    assert third["search"] == second["search"] and third["top"] == second["top"]  # replayed as it was


@pytest.mark.slow
async def test_a_removal_folds_the_tools_back_into_the_top_level_list(tmp_path: Path) -> None:
    bodies = await _bodies("ours", tmp_path, SEARCH, "narrow")
    assert [_shape(body)["top"] for body in bodies] == [["read", "bash", "edit", "write"], ["read"], ["read"]]
    assert all(_shape(body)["search"] == [] for body in bodies)


@pytest.mark.slow
async def test_without_in_place_system_messages_tool_search_changes_nothing(tmp_path: Path) -> None:
    bodies = await _bodies("ours", tmp_path, {"supportsToolSearch": True}, "widen")
    assert _shape(bodies[-1])["top"] == ["read", "bash", "edit", "write", "grep"]
    assert _shape(bodies[-1])["search"] == []


CASES = {"widened": (SEARCH, "widen"), "narrowed": (SEARCH, "narrow"),
         "additional tools win": ({**SEARCH, "supportsAdditionalTools": True}, "widen"),
         "strict": ({**SEARCH, "supportsStrictMode": True}, "widen")}


@needs_reference
@pytest.mark.timeout(180)
@pytest.mark.parametrize("case", list(CASES))
async def test_tool_search_matches_reference(case: str, tmp_path: Path) -> None:
    ours = await _bodies("ours", tmp_path, *CASES[case])
    reference = await _bodies("reference", tmp_path, *CASES[case])
    assert [_shape(body) for body in ours] == [_shape(body) for body in reference]


# ------------------------------------------------------------------------------- Azure and Codex bodies

GREP = {"name": "grep", "description": "Search.", "parameters": {"type": "object", "properties": {
    "pattern": {"type": "string"}}, "required": ["pattern"]}}
READ = {**GREP, "name": "read"}
LATER: Any = {"systemPrompt": "p", "tools": [READ], "messages": [
    {"role": "user", "content": "a", "timestamp": 0},
    {"role": "system", "content": "", "toolsAdded": [GREP], "timestamp": 1},
    {"role": "user", "content": "b", "timestamp": 2}]}


def _searched(body: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    search = [item for item in body["input"] if item.get("type") in SEARCH_ITEMS]
    return [tool["name"] for tool in body["tools"]], search


def test_azure_sends_later_tools_as_a_tool_search_with_strict_tools_by_default() -> None:
    compat = {**SEARCH, "supportsMidConvoEffort": True, "supportsExplicitPromptCacheMode": True}
    model: Model = {**builtin_models("azure")[0], "compat": compat, "reasoning": True}  # type: ignore[typeddict-item]
    body = azure_openai.responses_body(model, LATER, StreamOptions(thinking_level="high", cache_retention="none"))
    top, (call, output) = _searched(body)
    assert top == ["read"] and call["arguments"] == {"query": "grep", "limit": 1}
    assert output["tools"] == [{**GREP, "type": "function", "defer_loading": True, "strict": False}]
    # pi's Azure requests know neither effort updates nor prompt cache options
    assert body["reasoning"]["effort"] == "high" and "prompt_cache_options" not in body
    assert not any(item.get("type") == "configuration_update" for item in body["input"])


def test_codex_sends_later_tools_as_a_tool_search_with_null_strictness() -> None:
    luna = next(m for m in builtin_models("openai-codex") if m["id"] == "gpt-5.6-luna")
    model: Model = {**luna, "compat": {**SEARCH, "supportsOpenAIGrammarTools": True}}  # type: ignore[typeddict-item]
    token_options = StreamOptions(api_key="unused")
    top, (call, output) = _searched(openai_codex.build_body(model, LATER, token_options))
    assert top == ["read"] and output["call_id"] == call["call_id"]
    assert output["tools"] == [{**GREP, "type": "function", "defer_loading": True, "strict": None}]


async def test_a_namespaced_call_keeps_its_namespace_for_its_own_model(fake_llm: FakeLLMServer) -> None:
    """A call to a loaded tool comes back with the tool's namespace: it is kept on the call and replayed
    to the model that made it (another model gets the call without it)."""
    model: Model = {"id": "gpt-t", "name": "t", "api": "openai-responses", "provider": "openai",  # type: ignore[typeddict-item]
                    "baseUrl": f"{fake_llm.url}/v1", "reasoning": False, "input": ["text"], "contextWindow": 100000,
                    "maxTokens": 1000, "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}}
    fake_llm.add({"content": [{"type": "toolCall", "id": "call_n", "name": "search", "namespace": "docs",
                               "arguments": {"q": "x"}}]}, {"content": []}, {"content": []})
    user = {"role": "user", "content": "find", "timestamp": 0}
    answer = await stream(model, {"messages": [user]}, StreamOptions(api_key="sk-t")).result()
    assert answer["content"] == [{"type": "toolCall", "id": "call_n|fc_fake0", "name": "search",
                                  "arguments": {"q": "x"}, "namespace": "docs"}]
    result = {"role": "toolResult", "toolCallId": "call_n|fc_fake0", "toolName": "search",
              "content": [{"type": "text", "text": "found"}], "isError": False, "timestamp": 1}
    for replayed_to in (model, {**model, "id": "gpt-other"}):
        await stream(replayed_to, {"messages": [user, answer, result]}, StreamOptions(api_key="sk-t")).result()
    same, other = ([i for i in r["body"]["input"] if i.get("type") == "function_call"] for r in fake_llm.requests[1:])
    assert same == [{"type": "function_call", "id": "fc_fake0", "call_id": "call_n", "name": "search",
                     "arguments": '{"q":"x"}', "namespace": "docs"}]
    assert other == [{"type": "function_call", "call_id": "call_n", "name": "search", "arguments": '{"q":"x"}'}]
