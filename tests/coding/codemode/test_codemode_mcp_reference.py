"""Codemode scripts calling MCP tools, side by side with the reference pi 1.6.0.

A script in the first prompt names a server that is still connecting (it starts a second late):
pi waits for the servers a script names, or for all of them when it uses a discovery global. What
``await tools.mcp__...()`` resolves to is the MCP ``CallToolResult`` (without ``_meta``), also for a
tool without an output schema.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.support.fakes.llm_server import FakeLLMServer
from tests.support.rpc_compare import Conversation, Record, Workspace, needs_reference
from tests.support.rpc_helpers import PYTHON, ROOT

pytestmark = pytest.mark.timeout(180)
SLOW_SERVER = {"command": "sh", "args": ["-c", f"sleep 1; exec {PYTHON} -m tests.support.fakes.mcp_server stdio"],
               "cwd": str(ROOT)}
SCRIPTS = [
    "return await tools.mcp__slow__echo({ text: 'hi' })",  # the first prompt: the server is still connecting
    # a tool without an output schema resolves to the result object too
    "const r = await tools.mcp__slow__picture({}); return r.content[0].text + ' / ' + JSON.stringify(r);",
    "return (await tools.mcp__slow__fail({})).isError",
]


def _script() -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = []
    for index, code in enumerate(SCRIPTS):
        steps.append({"content": [{"type": "toolCall", "id": f"cm{index}", "name": "codemode",
                                   "arguments": {"code": code}}]})
        steps.append({"content": [{"type": "text", "text": "done"}]})
    return steps


async def _drive(conv: Conversation) -> None:
    for _ in SCRIPTS:
        await conv.prompt("go")


def _results(records: list[Record]) -> list[str]:
    ends = [r for r in records if r["type"] == "tool_execution_end" and r["toolName"] == "codemode"]
    texts = ["".join(b.get("text", "") for b in r["result"]["content"]) for r in ends]
    return [re.sub(r"Wall time \d+\.\d seconds", "Wall time N seconds", t) for t in texts]


async def _play(kind: str, root: Path) -> list[str]:
    """The conversation with an ``mcp.json`` naming the slow server, written before the process starts."""
    with FakeLLMServer() as server:
        server.add(*_script())
        workspace = Workspace.create(root / kind, server.url)
        (workspace.agent_dir / "mcp.json").write_text(json.dumps({"mcpServers": {"slow": SLOW_SERVER}}))
        proc = await workspace.spawn(kind, "--no-session")
        conversation = Conversation(proc, server, workspace)
        try:
            await _drive(conversation)
        finally:
            await proc.kill()
        return _results(conversation.records)


@needs_reference
async def test_scripts_calling_mcp_tools_match_the_reference(tmp_path: Path) -> None:
    ours = await _play("ours", tmp_path)
    reference = await _play("reference", tmp_path)
    assert ours == reference


@pytest.mark.slow  # the server takes a second to start, on purpose
async def test_a_first_prompt_script_waits_for_the_server_it_names(tmp_path: Path) -> None:
    results = await _play("ours", tmp_path)
    assert all(r.startswith("Script completed") for r in results), results
