"""Host-side tools and gates of the SDK: ``@tool`` (schema from hints, validation, results),
``can_use_tool`` before every kind of tool call, ``mcp_servers`` as data (coding/sdk/)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field

from pi_coding_agent import (
    Allow,
    ConfigurationError,
    Deny,
    ToolContext,
    ToolResult,
    create_agent_session,
    tool,
)
from pi_coding_agent.coding.sdk import FunctionTool
from tests.support.mcp_helpers import stdio_server


class Address(BaseModel):
    city: str
    zip_code: str | None = None


@tool
def ship(item: str, count: int, speed: Literal["slow", "fast"] = "slow", to: Address | None = None,
         tags: list[str] | None = None,
         note: Annotated[str, Field(description="free text for the courier")] = "") -> dict[str, Any]:
    """Ship items to an address.

    Args:
        item: what to ship
        count: how many; must be
            a whole number
    """
    return {"item": item, "count": count, "speed": speed, "city": to.city if to else None, "tags": tags or []}


@tool(name="lookup", description="Look a word up")
async def look_up(word: str) -> Address:
    await asyncio.sleep(0)
    return Address(city=word.upper())


async def execute(made: Any, params: dict[str, Any]) -> ToolResult:
    result: ToolResult = await made.execute("id", params, None, lambda _: None)
    return result


def test_the_schema_comes_from_the_hints_and_the_docstring() -> None:
    assert ship.name == "ship" and ship.description == "Ship items to an address."
    props = ship.parameters["properties"]
    assert ship.parameters["required"] == ["item", "count"]
    assert props["item"] == {"type": "string", "description": "what to ship"}
    assert props["count"] == {"type": "integer", "description": "how many; must be a whole number"}
    assert props["speed"]["enum"] == ["slow", "fast"] and props["speed"]["default"] == "slow"
    assert props["note"]["description"] == "free text for the courier"
    assert props["tags"]["anyOf"][0] == {"type": "array", "items": {"type": "string"}}
    address = props["to"]["anyOf"][0]  # the pydantic model inlined: no $ref a provider might not resolve
    assert address["properties"]["city"] == {"type": "string"} and address["required"] == ["city"]
    assert "$defs" not in json.dumps(ship.parameters)
    assert ship("pen", 2)["count"] == 2  # still the function
    assert look_up.name == "lookup" and look_up.description == "Look a word up"


class Node(BaseModel):
    name: str
    children: list[Node] = []


def test_a_model_that_refers_to_itself_keeps_its_references() -> None:
    @tool
    def walk(tree: Node) -> str:
        """Walk a tree."""
        return tree.name

    assert walk.parameters["properties"]["tree"] == {"$ref": "#/$defs/Node"}
    assert walk.parameters["$defs"]["Node"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}


async def test_arguments_are_validated_and_results_become_text() -> None:
    shipped = await execute(ship, {"item": "pen", "count": "3", "to": {"city": "Oslo"}, "tags": ["x"]})
    assert not shipped.is_error
    assert json.loads(shipped.content[0]["text"]) == {"item": "pen", "count": 3, "speed": "slow", "city": "Oslo",
                                                      "tags": ["x"]}
    wrong = await execute(ship, {"item": "pen", "count": "many", "speed": "warp"})
    assert wrong.is_error
    assert "count: Input should be a valid integer" in wrong.content[0]["text"]
    assert "speed: Input should be 'slow' or 'fast'" in wrong.content[0]["text"]
    looked = await execute(look_up, {"word": "pi"})
    assert json.loads(looked.content[0]["text"]) == {"city": "PI", "zip_code": None}
    passed = await execute(tool(lambda: ToolResult(content=[{"type": "text", "text": "as is"}], is_error=True)), {})
    assert passed.is_error and passed.content == [{"type": "text", "text": "as is"}]
    data = await execute(FunctionTool("f", "d", lambda params: {"n": 1}), {})
    assert data.content[0]["text"] == '{"n":1}'  # JSON, not a Python repr


async def test_a_tool_call_reaches_the_function_and_errors_reach_the_model(tmp_path: Path) -> None:
    script = [{"content": [{"type": "toolCall", "name": "ship", "arguments": {"item": "pen", "count": "x"}},
                           {"type": "toolCall", "name": "lookup", "arguments": {"word": "oslo"}}]},
              {"content": [{"type": "text", "text": "done"}]}]
    async with create_agent_session(cwd=tmp_path, agent_dir=tmp_path, provider="faux", model="faux-1",
                                    in_memory=True, load_resources=False, custom_tools=[ship, look_up],
                                    faux_script=script) as session:
        result = await session.run("ship it")
    results = [m for m in result.messages if m["role"] == "toolResult"]
    assert [r["isError"] for r in results] == [True, False]
    assert "count" in results[0]["content"][0]["text"] and "OSLO" in results[1]["content"][0]["text"]


def extension_with_a_tool(pi: Any) -> None:
    pi.register_tool(name="ext_echo", description="echo", parameters={
        "type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        execute=lambda call_id, params, *rest: {"content": [{"type": "text", "text": "ext " + params["text"]}]})


async def test_can_use_tool_sees_every_kind_of_call(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("secret")
    asked: list[tuple[str, dict[str, Any], ToolContext]] = []

    async def can_use_tool(name: str, args: dict[str, Any], context: ToolContext) -> Allow | Deny | bool:
        asked.append((name, dict(args), context))
        if name == "read":
            return Deny("reading is not allowed here")
        if name == "lookup":
            return Allow(args={"word": "changed"})
        return True

    script = [{"content": [{"type": "toolCall", "id": "r1", "name": "read", "arguments": {"path": "a.txt"}},
                           {"type": "toolCall", "id": "l1", "name": "lookup", "arguments": {"word": "orig"}},
                           {"type": "toolCall", "id": "e1", "name": "ext_echo", "arguments": {"text": "hi"}},
                           {"type": "toolCall", "id": "c1", "name": "codemode", "arguments": {
                               "code": "return await tools.ls({ path: '.' });"}}]},
              {"content": [{"type": "text", "text": "done"}]}]
    async with create_agent_session(cwd=tmp_path, agent_dir=tmp_path, provider="faux", model="faux-1",
                                    in_memory=True, load_resources=False, tools=["read", "ls", "codemode", "lookup", "ext_echo"],
                                    custom_tools=[look_up], extensions=[extension_with_a_tool],
                                    can_use_tool=can_use_tool, faux_script=script) as session:
        result = await session.run("go")
        session_id = session.sm.session_id
    assert {name for name, _, _ in asked} == {"read", "lookup", "ext_echo", "codemode", "ls"}  # ls: inside codemode
    read = next(ctx for name, _, ctx in asked if name == "read")
    assert read == ToolContext(session_id, "r1", tmp_path.resolve())
    texts = {m["toolName"]: (m["isError"], "".join(c["text"] for c in m["content"])) for m in result.messages
             if m["role"] == "toolResult"}
    assert texts["read"] == (True, "reading is not allowed here")
    assert "CHANGED" in texts["lookup"][1] and texts["ext_echo"] == (False, "ext hi")
    assert "a.txt" in texts["codemode"][1]


@pytest.mark.slow
async def test_mcp_servers_keyword_adds_servers(tmp_path: Path) -> None:
    (tmp_path / "mcp.json").write_text(json.dumps({"mcpServers": {"filed": stdio_server()}}))
    script = [{"content": [{"type": "toolCall", "name": "mcp__given__echo", "arguments": {"text": "hey"}}]},
              {"content": [{"type": "text", "text": "done"}]}]
    given = {"given": stdio_server(exposure="direct")}
    async with create_agent_session(cwd=tmp_path, agent_dir=tmp_path, provider="faux", model="faux-1",
                                    in_memory=True, load_resources=False, faux_script=script, mcp_servers=given,
                                    mcp_config_files=False, discover_extensions=True) as session:
        result = await session.run("echo")
        servers = session.rt.mcp.manager.config.servers if session.rt.mcp and session.rt.mcp.manager else []
    assert [s.name for s in servers] == ["given"]  # the agent dir's mcp.json was left out
    echoed = [m for m in result.messages if m["role"] == "toolResult"]
    assert echoed and echoed[0]["content"][0]["text"] == "echo: hey"
    with pytest.raises(ConfigurationError, match="mcp_servers\\['bad'\\]"):
        await create_agent_session(cwd=tmp_path, agent_dir=tmp_path, provider="faux", model="faux-1",
                                   in_memory=True, mcp_servers={"bad": {"command": 3}})


async def test_a_denial_can_end_the_run_and_changed_arguments_are_validated(tmp_path: Path) -> None:
    async def can_use_tool(name: str, args: dict[str, Any], context: ToolContext) -> Allow | Deny:
        if name == "lookup":
            return Allow(args={})  # no word: refused like a model's bad arguments
        return Deny("stop here", interrupt=True)

    calls = {"content": [{"type": "toolCall", "name": "lookup", "arguments": {"word": "ok"}},
                         {"type": "toolCall", "name": "ls", "arguments": {}}]}
    async with create_agent_session(cwd=tmp_path, agent_dir=tmp_path, provider="faux", model="faux-1",
                                    in_memory=True, load_resources=False, tools=["ls", "lookup"],
                                    custom_tools=[look_up], can_use_tool=can_use_tool,
                                    faux_script=[calls, {"content": [{"type": "text", "text": "unreached"}]}]) as session:
        result = await session.run("go")
    results = {m["toolName"]: m["content"][0]["text"] for m in result.messages if m["role"] == "toolResult"}
    assert results["lookup"].startswith("Validation failed") and "word" in results["lookup"], results
    assert results["ls"] == "stop here"
    assert result.aborted and result.stop_reason == "aborted"
    assert "unreached" not in json.dumps(result.messages)  # no request after the denied call
