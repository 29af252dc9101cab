"""A stdio MCP server that exits at once: reported as a failed server, with nothing on pi's stderr."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.fakes.llm_server import FakeLLMServer
from tests.support.mcp_helpers import McpWorkspace


async def test_a_server_that_exits_at_once_is_reported_without_a_stray_task_error(tmp_path: Path) -> None:
    with FakeLLMServer() as llm:
        ws = McpWorkspace(tmp_path, llm)
        ws.servers({"dead": {"command": "sh", "args": ["-c", "echo boom >&2; exit 3"]}})
        pi = await ws.pi()
        try:
            await pi.request({"type": "get_state"})
            # the start-up report comes before stdin closes
            await pi.read_until(lambda r: r.get("method") == "notify" and "need attention" in r["message"])
            await pi.close_stdin()
            await pi.read_rest()
            assert await pi.wait() == 0
        finally:
            await pi.kill()
        stderr = await pi.stderr_text()
    notices = [r["message"] for r in map(json.loads, pi.raw_lines) if r.get("method") == "notify"]
    assert notices == ["MCP servers need attention:\n  dead: failed: MCP connection closed\nRun /mcp to fix."]
    assert "Task exception was never retrieved" not in stderr and "Traceback" not in stderr, stderr
