"""``compat.supportsOpenAIGrammarTools``: a tool that declares a grammar (``constrainedSampling``) is sent
as an OpenAI custom tool, the model's custom call is read as ordinary arguments and replayed as a custom
call with a custom result; with the switch off it is a plain function tool.

An extension registers the tool on both sides (``constrained_sampling`` here, ``constrainedSampling`` in
pi); our ``pi --mode rpc`` answers a prompt from the fake server in Chat Completions and Responses form.
Ours alone, then side by side with pi 1.6.0. The Codex backend's WebSocket continuation with a custom
call is checked through the adapter, on the fake Codex server.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from pi_coding_agent.ai.apis import codex_websocket, grammar_tools, openai_codex
from pi_coding_agent.ai.models.catalog import builtin_models
from pi_coding_agent.ai.stream import StreamOptions, stream
from pi_coding_agent.ai.types import Model
from tests.support.fakes.codex_server import FakeCodexServer, codex_token
from tests.support.fakes.llm_server import FakeLLMServer
from tests.support.rpc_compare import Conversation, Workspace, needs_reference

LARK = 'start: WORD (" " WORD)*\nWORD: /[A-Z]+/'
SHOUT = {"name": "shout", "description": "Say it loud.",
         "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
         "constrainedSampling": {"type": "grammar", "variants": {"openai_lark": LARK}}}
EXTENSION = {
    "ours": f"""
def setup(pi):
    async def shout(tool_call_id, params, signal, on_update, ctx):
        return {{"content": [{{"type": "text", "text": "heard: " + params["text"]}}]}}

    pi.register_tool(name="shout", description="Say it loud.", execute=shout,
                     parameters={json.dumps(SHOUT["parameters"])},
                     constrained_sampling={json.dumps(SHOUT["constrainedSampling"])})
""",
    "reference": f"""
export default function (pi) {{
  pi.registerTool({{
    name: "shout", label: "shout", description: "Say it loud.",
    parameters: {json.dumps(SHOUT["parameters"])},
    constrainedSampling: {json.dumps(SHOUT["constrainedSampling"])},
    async execute(id, params) {{ return {{ content: [{{ type: "text", text: "heard: " + params.text }}] }}; }},
  }});
}}
""",
}
CUSTOM_CALL = {"content": [{"type": "customToolCall", "id": "call_g1", "name": "shout", "input": "HELLO \"LOUD\" WORLD"}]}
FUNCTION_CALL = {"content": [{"type": "toolCall", "id": "call_g1", "name": "shout",
                              "arguments": {"text": "HELLO \"LOUD\" WORLD"}}]}
CASES = {"completions custom": ("openai-completions", True), "completions plain": ("openai-completions", False),
         "responses custom": ("openai-responses", True), "responses plain": ("openai-responses", False)}


async def _run(kind: str, root: Path, case: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The request bodies and the records of one prompt whose answer calls ``shout``."""
    api, grammar = CASES[case]
    with FakeLLMServer() as server:
        server.add(CUSTOM_CALL if grammar else FUNCTION_CALL, {"content": [{"type": "text", "text": "done"}]})
        workspace = Workspace.create(root / kind, server.url)
        workspace.set_model(api, {"supportsOpenAIGrammarTools": grammar})
        proc = await workspace.spawn_with(kind, EXTENSION, "--no-session")
        conv = Conversation(proc, server, workspace)
        try:
            await conv.prompt("shout it")
        finally:
            await proc.kill()
        return [request["body"] for request in server.requests], conv.records


def _declared(body: dict[str, Any]) -> Any:
    """The shout tool as the request declares it."""
    for tool in body.get("tools", []):
        if "shout" in (tool.get("name"), (tool.get("function") or {}).get("name"), (tool.get("custom") or {}).get("name")):
            return tool
    raise AssertionError("shout is not declared")


def _replayed(body: dict[str, Any]) -> list[Any]:
    """The call and its result as the second request sends them back."""
    if "messages" in body:
        return [m for m in body["messages"] if m.get("tool_calls") or m["role"] == "tool"]
    return [item for item in body["input"] if "call" in str(item.get("type"))]


def _streamed(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The tool call deltas a client sees, the final call's arguments and what the tool received."""
    events = [r["assistantMessageEvent"] for r in records if r["type"] == "message_update"]
    start = next(r for r in records if r["type"] == "tool_execution_start")
    return {"deltas": [e["delta"] for e in events if e["type"] == "toolcall_delta"],
            "final": [e["toolCall"]["arguments"] for e in events if e["type"] == "toolcall_end"],
            "args": start["args"],
            "result": next(r for r in records if r["type"] == "tool_execution_end")["result"]["content"]}


def _shape(run: tuple[list[dict[str, Any]], list[dict[str, Any]]]) -> dict[str, Any]:
    bodies, records = run
    return {"declared": _declared(bodies[0]), "replayed": _replayed(bodies[1]), "streamed": _streamed(records)}


@pytest.mark.parametrize("case", ["completions custom", "responses custom"])
@pytest.mark.slow
async def test_grammar_tool_is_a_custom_tool_and_its_call_carries_text(case: str, tmp_path: Path) -> None:
    shape = _shape(await _run("ours", tmp_path, case))
    text = 'HELLO "LOUD" WORLD'
    assert shape["streamed"]["args"] == {"text": text} and shape["streamed"]["final"] == [{"text": text}]
    assert json.loads("".join(shape["streamed"]["deltas"])) == {"text": text}  # the deltas spell the JSON arguments
    assert shape["streamed"]["result"] == [{"type": "text", "text": f"heard: {text}"}]
    declared, replayed = shape["declared"], shape["replayed"]
    if case.startswith("completions"):
        assert declared == {"type": "custom", "custom": {"name": "shout", "description": "Say it loud.", "format": {
            "type": "grammar", "grammar": {"syntax": "lark", "definition": LARK}}}}
        assert replayed[0]["tool_calls"] == [{"id": "call_g1", "type": "custom",
                                              "custom": {"name": "shout", "input": text}}]
        assert replayed[1] == {"role": "tool", "content": f"heard: {text}", "tool_call_id": "call_g1"}
    else:
        assert declared == {"type": "custom", "name": "shout", "description": "Say it loud.",
                            "format": {"type": "grammar", "syntax": "lark", "definition": LARK}}
        assert replayed == [{"type": "custom_tool_call", "id": "ctc_fake0", "call_id": "call_g1", "name": "shout",
                             "input": text},
                            {"type": "custom_tool_call_output", "call_id": "call_g1", "output": f"heard: {text}"}]


@pytest.mark.parametrize("case", ["completions plain", "responses plain"])
@pytest.mark.slow
async def test_without_the_switch_a_grammar_tool_is_a_function_tool(case: str, tmp_path: Path) -> None:
    shape = _shape(await _run("ours", tmp_path, case))
    declared = shape["declared"]
    assert declared["type"] == "function" and "custom" not in json.dumps(shape["replayed"])
    parameters = declared.get("parameters") or declared["function"]["parameters"]
    assert parameters == SHOUT["parameters"]
    assert shape["streamed"]["args"] == {"text": 'HELLO "LOUD" WORLD'}


@needs_reference
@pytest.mark.timeout(180)
@pytest.mark.parametrize("case", list(CASES))
async def test_grammar_tools_match_reference(case: str, tmp_path: Path) -> None:
    ours, reference = _shape(await _run("ours", tmp_path, case)), _shape(await _run("reference", tmp_path, case))
    assert ours == reference


def test_a_malformed_grammar_declaration_is_refused_with_pi_words() -> None:
    two = {**SHOUT, "parameters": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                                   "required": ["a", "b"]}}
    words = ('Tool "shout" cannot use grammar constrained sampling: grammar constrained sampling requires exactly '
             "one required string property.")
    with pytest.raises(ValueError, match=f"^{re.escape(words)}$"):
        grammar_tools.resolve_grammar(two, True)
    empty = {**SHOUT, "constrainedSampling": {"type": "grammar", "variants": {"openai_lark": " "}}}
    with pytest.raises(ValueError, match="no supported grammar variant was provided"):
        grammar_tools.resolve_grammar(empty, True)
    assert grammar_tools.resolve_grammar(empty, False) is None  # only checked where it would be sent
    regex = {**SHOUT, "constrainedSampling": {"type": "grammar", "variants": {"openai_regex": "[A-Z]+"}}}
    assert grammar_tools.resolve_grammar(regex, True) == grammar_tools.Grammar("regex", "[A-Z]+", "text")


def test_streamed_text_becomes_json_arguments_piece_by_piece() -> None:
    held = grammar_tools.GrammarInput("text", 'a"')  # text the item arrived with waits for the next piece
    assert held.unsent == '{"text":"a\\"'
    assert held.append("\n") == '{"text":"a\\"\\n'
    assert held.append("") is None
    assert held.close('a"\nb') == 'b"}' and held.arguments == {"text": 'a"\nb'}
    assert held.close('a"\nb') is None
    with pytest.raises(Exception, match="changed after it was closed"):
        held.close("other")
    fresh = grammar_tools.GrammarInput("text")
    assert fresh.append("abc") == '{"text":"abc'
    with pytest.raises(Exception, match="changed non-monotonically"):
        fresh.close("xyz")


# ------------------------------------------------------------------------ Codex WebSocket continuation


def _codex(url: str) -> Model:
    luna = next(m for m in builtin_models("openai-codex") if m["id"] == "gpt-6-luna")
    return {**luna, "baseUrl": f"{url}/backend-api"}  # type: ignore[typeddict-item]


async def test_codex_continuation_replays_a_custom_call_as_the_socket_expects(tmp_path: Path) -> None:
    codex_websocket._sessions.clear()
    openai_codex._sse_sessions.clear()
    token = codex_token("acct-g")
    user = {"role": "user", "content": "shout", "timestamp": 0}
    context: Any = {"systemPrompt": "be loud", "tools": [SHOUT], "messages": [user]}
    with FakeCodexServer() as server:
        server.add({**CUSTOM_CALL, "id": "resp_g1"}, {"content": [{"type": "text", "text": "ok"}], "id": "resp_g2"})
        model = _codex(server.url)
        options = StreamOptions(api_key=token, session_id="sess-g", thinking_level="low")
        first = await stream(model, context, options).result()
        assert first["content"][0]["arguments"] == {"text": 'HELLO "LOUD" WORLD'}, first.get("errorMessage")
        result = {"role": "toolResult", "toolCallId": first["content"][0]["id"], "toolName": "shout",
                  "content": [{"type": "text", "text": "heard"}], "isError": False, "timestamp": 1}
        context["messages"] = [user, first, result]
        second = await stream(model, context, options).result()
        await codex_websocket.close_all()
    assert second["content"][0]["text"] == "ok", second.get("errorMessage")
    full, delta = server.frames
    assert full["input"][0]["type"] == "additional_tools" and full["input"][0]["tools"][0]["type"] == "custom"
    assert delta["previous_response_id"] == "resp_g1"  # the custom call matched the answer's own item
    assert delta["input"] == [{"type": "custom_tool_call_output", "call_id": "call_g1", "output": "heard"},
                              {"type": "configuration_update", "reasoning": {"effort": "low"}}]


def test_declarations_carry_constrained_sampling_as_pi_records_them() -> None:
    from pi_coding_agent.agent.tool import tool_declaration
    from pi_coding_agent.coding.sdk import FunctionTool

    shout = FunctionTool(name="shout", description="Say it loud.", fn=str, parameters=SHOUT["parameters"],
                         constrained_sampling=SHOUT["constrainedSampling"])
    assert tool_declaration(shout) == SHOUT
    # an explicit "none" stays in the declaration (and so in the session's system messages), as in pi
    assert tool_declaration(FunctionTool(name="t", description="d", fn=str,
                                         constrained_sampling=False))["constrainedSampling"] is False
    assert "constrainedSampling" not in tool_declaration(FunctionTool(name="t", description="d", fn=str))
