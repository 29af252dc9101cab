"""ACP building blocks in isolation: prompt content, plan detection, tool-call rendering, extension UI."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from pi_coding_agent.coding.modes.acp.jsonrpc import ConnectionClosed, RpcError
from pi_coding_agent.coding.modes.acp.prompt import to_pi_prompt
from pi_coding_agent.coding.modes.acp.tool_calls import start_update
from pi_coding_agent.coding.modes.acp.ui import AcpExtensionUI
from pi_coding_agent.coding.modes.acp.updates import plan_entries


def test_prompt_blocks_become_one_message_with_inline_resources() -> None:
    text, images = to_pi_prompt([
        {"type": "text", "text": "compare "},
        {"type": "resource_link", "uri": "file:///w/a%20b.py", "name": "a b.py"},
        {"type": "text", "text": " with"},
        {"type": "resource", "resource": {"uri": "file:///w/c.py", "text": "print(1)"}},
        {"type": "image", "data": "AAAA", "mimeType": "image/png"},
        {"type": "resource", "resource": {"uri": "file:///w/p.gif", "blob": "R0lG", "mimeType": "image/gif"}},
        {"type": "resource", "resource": {"uri": "file:///w/x.bin", "blob": "AA", "mimeType": "application/zip"}},
    ])
    assert text == ('compare [@a b.py](/w/a b.py) with\n<file name="/w/c.py">\nprint(1)\n</file>\n'
                    '[image: /w/p.gif][binary resource /w/x.bin (application/zip) not included]')
    assert images == [{"type": "image", "data": "AAAA", "mimeType": "image/png"},
                      {"type": "image", "data": "R0lG", "mimeType": "image/gif"}]


@pytest.mark.parametrize("blocks", [[], "text", [{"type": "audio", "data": "", "mimeType": "audio/wav"}],
                                    [{"type": "image", "data": "AA", "mimeType": "text/plain"}],
                                    [{"type": "resource", "resource": {"text": "no uri"}}]])
def test_bad_prompt_blocks_are_invalid_params(blocks: Any) -> None:
    with pytest.raises(RpcError) as caught:
        to_pi_prompt(blocks)
    assert caught.value.code == -32602


def test_a_markdown_task_list_is_a_plan() -> None:
    text = "Plan:\n- [x] read the code\n- [ ] fix the bug\n1. [ ] run the tests\nnot a task"
    assert plan_entries(text) == [
        {"content": "read the code", "priority": "medium", "status": "completed"},
        {"content": "fix the bug", "priority": "medium", "status": "pending"},
        {"content": "run the tests", "priority": "medium", "status": "pending"}]
    assert plan_entries("- [ ] only one") == []


def test_tool_call_rendering(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("old\n")
    write = start_update("w", "write", {"path": "f.txt", "content": "new\n"}, str(tmp_path), "pending")
    assert write["content"] == [{"type": "diff", "path": str(tmp_path / "f.txt"), "oldText": "old\n",
                                 "newText": "new\n"}]
    read = start_update("r", "read", {"path": "f.txt", "offset": 3, "limit": 2}, str(tmp_path), "pending")
    assert read["title"] == "Read f.txt (from line 3, 2 lines)" and read["kind"] == "read"
    assert read["locations"] == [{"path": str(tmp_path / "f.txt"), "line": 3}]
    bash = start_update("b", "bash", {"command": "ls -la\necho more"}, str(tmp_path), "pending")
    assert bash["title"] == "`ls -la`" and bash["kind"] == "execute" and "locations" not in bash
    legacy = start_update("e", "edit", {"path": "f.txt", "oldText": "old", "newText": "new"}, str(tmp_path), "pending")
    assert legacy["content"] == [{"type": "diff", "path": str(tmp_path / "f.txt"), "oldText": "old", "newText": "new"}]
    other = start_update("x", "mcp__docs__search", {"q": 1}, str(tmp_path), "pending")
    assert other["kind"] == "other" and other["title"] == "mcp__docs__search" and other["rawInput"] == {"q": 1}


class _Client:
    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.asked: list[dict[str, Any]] = []

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        self.asked.append(params)
        if isinstance(self.answer, Exception):
            raise self.answer
        if self.answer == "hang":
            await asyncio.sleep(60)
        return self.answer


def _ui(client: _Client) -> AcpExtensionUI:
    ui = AcpExtensionUI(client.request, lambda sid, update: None)
    ui.bind("s1")
    return ui


async def test_extension_dialogs_map_to_permission_requests() -> None:
    yes = _Client({"outcome": {"outcome": "selected", "optionId": "yes"}})
    assert await _ui(yes).confirm("Deploy?", "to production") is True
    assert yes.asked[0]["toolCall"]["content"][0]["content"]["text"] == "to production"
    pick = _Client({"outcome": {"outcome": "selected", "optionId": "1"}})
    assert await _ui(pick).select("Pick", ["a", "b"]) == "b"
    assert [o["name"] for o in pick.asked[0]["options"]] == ["a", "b"]
    assert await _ui(_Client({"outcome": {"outcome": "cancelled"}})).confirm("t", "m") is False
    assert await _ui(_Client(ConnectionClosed())).select("t", ["a"]) is None
    assert await _ui(_Client("hang")).confirm("t", "m", timeout_ms=50) is False
    assert await _ui(_Client("hang")).input("name?") is None
