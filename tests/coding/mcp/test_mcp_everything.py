"""Interop with a server nobody here wrote: ``@modelcontextprotocol/server-everything`` from npm
(installed by scripts/install_test_deps.sh), driven by the fake LLM through the real RPC
process: sanitised tool names, images, resource links, progress, resources."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support.fakes.llm_server import FakeLLMServer
from tests.support.mcp_helpers import McpWorkspace, declared_tools, run_prompt
from tests.support.requirements import EVERYTHING
from tests.support.rpc_helpers import RpcProcess

pytestmark = [pytest.mark.timeout(180), pytest.mark.mcp_everything]


@pytest.fixture
async def pi(tmp_path: Path, fake_llm: FakeLLMServer) -> AsyncIterator[tuple[McpWorkspace, RpcProcess]]:
    ws = McpWorkspace(tmp_path, fake_llm)
    ws.servers({"everything": {"command": str(EVERYTHING), "args": ["stdio"], "exposure": "direct"}})
    proc = await ws.pi()
    yield ws, proc
    await proc.kill()


def _calls(*calls: tuple[str, str, dict[str, object]]) -> dict[str, object]:
    return {"content": [{"type": "toolCall", "id": cid, "name": name, "arguments": args} for cid, name, args in calls]}


@pytest.mark.slow
async def test_tools_results_and_progress(pi: tuple[McpWorkspace, RpcProcess]) -> None:
    ws, proc = pi
    ws.llm.add(_calls(("e", "mcp__everything__echo", {"message": "hello"}),
                      ("s", "mcp__everything__get_sum", {"a": 2, "b": 40}),
                      ("i", "mcp__everything__get_tiny_image", {}),
                      ("l", "mcp__everything__get_resource_links", {"count": 2}),
                      ("p", "mcp__everything__trigger_long_running_operation", {"duration": 1, "steps": 2})),
               {"content": [{"type": "text", "text": "done"}]})
    records = await run_prompt(proc, "go")
    assert "mcp__everything__get_tiny_image" in declared_tools(ws.llm.requests[0])
    ends = {r["toolCallId"]: r for r in records if r.get("type") == "tool_execution_end"}
    assert all(not end["isError"] for end in ends.values()), ends
    assert ends["e"]["result"]["content"][0]["text"] == "Echo: hello"
    assert "42" in ends["s"]["result"]["content"][0]["text"]
    assert any(b["type"] == "image" and b["mimeType"] == "image/png" for b in ends["i"]["result"]["content"])
    links = [b["text"] for b in ends["l"]["result"]["content"] if b["text"].startswith("[Resource ")]
    assert len(links) == 2 and all('Read it with read_mcp_resource (server "everything")' in t for t in links)
    updates = [r for r in records if r.get("type") == "tool_execution_update" and r["toolCallId"] == "p"]
    assert updates and updates[0]["partialResult"]["details"] == {"server": "everything",
                                                                  "tool": "trigger-long-running-operation"}
    assert ends["p"]["result"]["details"] == {"server": "everything", "tool": "trigger-long-running-operation"}


@pytest.mark.slow
async def test_resources_are_listed_and_read(pi: tuple[McpWorkspace, RpcProcess]) -> None:
    ws, proc = pi
    ws.llm.add(_calls(("l", "list_mcp_resources", {"server": "everything"}),
                      ("t", "list_mcp_resource_templates", {}),
                      ("r", "read_mcp_resource", {"server": "everything",
                                                  "uri": "demo://resource/static/document/architecture.md"})),
               {"content": [{"type": "text", "text": "done"}]})
    records = await run_prompt(proc, "resources")
    ends = {r["toolCallId"]: r for r in records if r.get("type") == "tool_execution_end"}
    listing = ends["l"]["result"]["structuredContent"]
    assert listing["server"] == "everything" and listing["resources"]
    assert all(item["server"] == "everything" and "uri" in item for item in listing["resources"])
    templates = ends["t"]["result"]["structuredContent"]["resourceTemplates"]
    assert templates and all("uriTemplate" in item for item in templates)
    read = ends["r"]["result"]
    assert read["structuredContent"]["uri"] == "demo://resource/static/document/architecture.md"
    assert read["content"][0]["type"] == "text" and read["content"][0]["text"]
