"""``compat.supportsMidConvoSystemMessages`` (models.json): a system message that changes the prompt
mid-conversation (here: an extension narrows the tools between two prompts) is sent where it stands,
framed by section name, instead of being folded into the leading prompt. Ours alone, then the
request bodies side by side with the reference pi 1.6.0."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.support.fakes.llm_server import FakeLLMServer
from tests.support.rpc_compare import Conversation, Workspace, needs_reference
from tests.support.run_once import RunOnce, shared_run

NARROW = {
    "ours": """
def setup(pi):
    pi.register_command("narrow", handler=lambda args, ctx: pi.set_active_tools(["read"]))
    pi.register_command("widen", handler=lambda args, ctx: pi.set_active_tools(["read", "bash", "edit", "write",
                                                                                  "grep"]))
""",
    "reference": """
export default function (pi) {
  pi.registerCommand("narrow", { handler: async () => { pi.setActiveTools(["read"]); } });
  pi.registerCommand("widen", { handler: async () => { pi.setActiveTools(["read", "bash", "edit", "write", "grep"]); } });
}
""",
}


async def requests_around(kind: str, root: Path, compat: dict[str, Any] | None, command: str, api: str,
                          later: int = 1) -> list[dict[str, Any]]:
    """Every request body of a prompt, ``/<command>`` and ``later`` more prompts."""
    with FakeLLMServer() as server:
        server.add(*({"content": [{"type": "text", "text": f"answer {n}"}]} for n in range(1 + later)))
        workspace = Workspace.create(root / kind, server.url)
        workspace.set_model(api, compat)
        proc = await workspace.spawn_with(kind, NARROW, "--no-session")
        conv = Conversation(proc, server, workspace)
        try:
            await conv.prompt("first")
            await conv.request({"type": "prompt", "message": f"/{command}"})
            for n in range(later):
                await conv.prompt(f"later {n}")
        finally:
            await proc.kill()
        return [request["body"] for request in server.requests]


_OURS: RunOnce[list[dict[str, Any]]] = RunOnce()
pytestmark = shared_run("mid-convo-system")  # tests of ours alone and comparisons read the same runs of ours


async def _last_request(kind: str, root: Path, compat: dict[str, Any] | None, command: str = "narrow",
                        api: str = "openai-completions") -> dict[str, Any]:
    """The last request body; our side's run is played once per process for the same inputs."""
    if kind != "ours":
        return (await requests_around(kind, root, compat, command, api))[-1]
    key = (json.dumps(compat, sort_keys=True), command, api)
    return (await _OURS.get(key, lambda: requests_around(kind, root, compat, command, api)))[-1]


def _shape(body: dict[str, Any]) -> dict[str, Any]:
    """Roles in order, the section names a mid-conversation system message updates, the tools."""
    messages = body["messages"]
    later = [m["content"] for m in messages[1:] if m["role"] in ("system", "developer")]
    return {"roles": [m["role"] for m in messages],
            "updated": [re.findall(r'Updated system prompt section "([a-z_-]+)"', text) for text in later],
            "tools": [t["function"]["name"] for t in body.get("tools", [])]}


CASES = {"folded": None, "off": {"supportsMidConvoSystemMessages": False},
         "in place": {"supportsMidConvoSystemMessages": True}}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.slow
async def test_mid_conversation_system_messages(case: str, tmp_path: Path) -> None:
    shape = _shape(await _last_request("ours", tmp_path, CASES[case]))
    assert shape["tools"] == ["read"]
    if case == "in place":
        assert shape["roles"] == ["system", "user", "assistant", "system", "user"]
        assert "tools" in shape["updated"][0]
    else:
        assert shape["roles"] == ["system", "user", "assistant", "user"]


@needs_reference
@pytest.mark.parametrize("case", list(CASES))
async def test_mid_conversation_system_messages_match_reference(case: str, tmp_path: Path) -> None:
    ours = await _last_request("ours", tmp_path, CASES[case])
    reference = await _last_request("reference", tmp_path, CASES[case])
    assert _shape(ours) == _shape(reference)


ADDITIONS = {"supportsMidConvoSystemMessages": True, "supportsMidConvoToolAdditions": True}
IN_INPUT = {"supportsMidConvoSystemMessages": True, "supportsAdditionalTools": True}


def _tool_names(tools: list[Any]) -> list[str]:
    return [t["function"]["name"] if "function" in t else t["name"] for t in tools]


def _declarations(body: dict[str, Any]) -> dict[str, Any]:
    """Where each tool is declared: the top-level list and, in order, every tool-carrying message or item,
    with the text of the instruction messages after the first."""
    entries = body.get("messages") or body.get("input") or []
    return {"top": _tool_names(body.get("tools", [])),
            "in place": [(e.get("type", e.get("role")), _tool_names(e["tools"])) for e in entries if "tools" in e],
            "notices": [text.split("\n")[0] for text in _instructions(entries)[1:]
                        if not text.startswith("Updated system prompt")]}


def _instructions(entries: list[Any]) -> list[str]:
    return [e["content"] for e in entries
            if e.get("role") in ("system", "developer") and isinstance(e.get("content"), str)]


@pytest.mark.slow
async def test_tools_added_mid_conversation_are_declared_where_they_were_added(tmp_path: Path) -> None:
    added = _declarations(await _last_request("ours", tmp_path / "a", ADDITIONS, "widen"))
    assert added["top"] == ["read", "bash", "edit", "write"] and added["in place"] == [("system", ["grep"])]
    folded = _declarations(await _last_request("ours", tmp_path / "b", {"supportsMidConvoSystemMessages": True},
                                               "widen"))
    assert folded["top"] == ["read", "bash", "edit", "write", "grep"] and folded["in place"] == []


@pytest.mark.slow
async def test_responses_tool_changes_in_additional_tools_items(tmp_path: Path) -> None:
    widened = _declarations(await _last_request("ours", tmp_path / "w", IN_INPUT, "widen", "openai-responses"))
    assert widened["top"] == []
    assert widened["in place"] == [("additional_tools", ["read", "bash", "edit", "write"]),
                                   ("additional_tools", ["grep"])]
    assert widened["notices"][0].startswith("This is an incremental tools update.")
    narrowed = await _last_request("ours", tmp_path / "n", IN_INPUT, "narrow", "openai-responses")
    update = [i["content"] for i in narrowed["input"] if "Do not call them" in str(i.get("content"))]
    assert len(update) == 1 and update[0].endswith("- bash\n- edit\n- write")


TOOL_CASES = {"completions additions": (ADDITIONS, "widen", "openai-completions"),
              "completions narrowed": (ADDITIONS, "narrow", "openai-completions"),
              "responses widened": (IN_INPUT, "widen", "openai-responses"),
              "responses narrowed": (IN_INPUT, "narrow", "openai-responses")}


@needs_reference
@pytest.mark.parametrize("case", list(TOOL_CASES))
async def test_mid_conversation_tool_changes_match_reference(case: str, tmp_path: Path) -> None:
    ours = await _last_request("ours", tmp_path, *TOOL_CASES[case])
    reference = await _last_request("reference", tmp_path, *TOOL_CASES[case])
    assert _declarations(ours) == _declarations(reference)
    removal = [[e["content"] for e in body.get("input", []) if "Do not call them" in str(e.get("content"))]
               for body in (ours, reference)]
    assert removal[0] == removal[1]


ANTHROPIC_NATIVE = {"supportsMidConvoSystemMessages": True, "supportsMidConvoToolChanges": True}


def _anthropic_shape(body: dict[str, Any]) -> dict[str, Any]:
    """Roles in order, each system message's blocks (tool blocks by tool name), the top-level tools."""
    def block(b: dict[str, Any]) -> Any:
        tool = b.get("tool") or {}
        return (b["type"], tool.get("name") or tool.get("definition", {}).get("name")) if tool else b["type"]

    return {"roles": [m["role"] for m in body["messages"]],
            "system": [[block(b) for b in m["content"]] for m in body["messages"] if m["role"] == "system"],
            "tools": [t["name"] for t in body.get("tools", [])]}


@pytest.mark.slow
async def test_anthropic_tool_changes_travel_in_system_messages(tmp_path: Path) -> None:
    body = await _last_request("ours", tmp_path, ANTHROPIC_NATIVE, "widen", "anthropic-messages")
    shape = _anthropic_shape(body)
    assert shape["tools"] == ["read", "bash", "edit", "write", "__pi_deferred_placeholder__"]
    assert shape["roles"] == ["user", "assistant", "user", "system"]  # held back past the user message
    assert ("tool_addition", "grep") in shape["system"][0]
    folded = _anthropic_shape(await _last_request("ours", tmp_path / "f", None, "widen", "anthropic-messages"))
    assert folded["system"] == [] and folded["tools"] == ["read", "bash", "edit", "write", "grep"]


ANTHROPIC_CASES = {"native widened": (ANTHROPIC_NATIVE, "widen"), "native narrowed": (ANTHROPIC_NATIVE, "narrow"),
                   "in place": ({"supportsMidConvoSystemMessages": True}, "widen"), "folded": (None, "narrow")}


@needs_reference
@pytest.mark.parametrize("case", list(ANTHROPIC_CASES))
async def test_anthropic_mid_conversation_changes_match_reference(case: str, tmp_path: Path) -> None:
    compat, command = ANTHROPIC_CASES[case]
    ours = await _last_request("ours", tmp_path, compat, command, "anthropic-messages")
    reference = await _last_request("reference", tmp_path, compat, command, "anthropic-messages")
    assert _anthropic_shape(ours) == _anthropic_shape(reference)
