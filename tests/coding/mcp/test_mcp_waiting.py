"""Waiting for an MCP connection never cancels it: a report a session replacement drops, the first
prompt's 10 s wait and a tool call aborted while its server reconnects each stop waiting, and the
attempt goes on to connect. (``asyncio.gather`` cancelled its tasks with its waiter: an ACP
client's server starting when an extension's ``ctx.new_session()`` came was killed half spawned.)
Real stdio servers (our FastMCP one) that take a second to start."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from pi_coding_agent.coding.mcp import manager as manager_module
from pi_coding_agent.coding.mcp.config import McpConfig, ServerEntry
from pi_coding_agent.coding.mcp.manager import McpManager
from tests.support.mcp_helpers import FAKE_SERVER
from tests.support.rpc_helpers import PYTHON, ROOT

pytestmark = pytest.mark.timeout(120)
SLOW_START_S = 1.0


def _slow_manager(tmp_path: Path, notices: list[str]) -> McpManager:
    """One ``direct`` server whose process waits ``SLOW_START_S`` before it becomes the server."""
    script = f"sleep {SLOW_START_S}; exec {PYTHON} {' '.join(FAKE_SERVER)} stdio"
    config = McpConfig()
    config.servers.append(ServerEntry("slow", {"command": "sh", "args": ["-c", script], "cwd": str(ROOT),
                                               "exposure": "direct"}, "test", "global"))
    return McpManager(config, ROOT, tmp_path, lambda message, _kind: notices.append(message))


async def _connected(manager: McpManager) -> str:
    await manager.wait_for_all()
    connection = manager.connections["slow"]
    state = connection.state if connection.error is None else f"{connection.state}: {connection.error}"
    await manager.close()
    return state


@pytest.mark.slow
async def test_a_dropped_report_leaves_the_attempt_running(tmp_path: Path) -> None:
    notices: list[str] = []
    manager = _slow_manager(tmp_path, notices)
    manager.start()
    await asyncio.sleep(0.2)  # the start-up report now waits for the attempt
    manager.renew()  # a replacement in the same directory: the pending report is dropped for a new one
    assert await _connected(manager) == "connected"
    assert notices == []


@pytest.mark.slow
async def test_the_first_prompt_stops_waiting_and_the_server_still_connects(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(manager_module, "STARTUP_WAIT_S", 0.2)
    notices: list[str] = []
    manager = _slow_manager(tmp_path, notices)
    manager.start()
    await manager.before_prompt(set())
    assert notices == ["MCP servers are still connecting; their tools become available once connected."]
    assert await _connected(manager) == "connected"


@pytest.mark.slow
async def test_a_cancelled_caller_leaves_the_reconnect_running(tmp_path: Path) -> None:
    manager = _slow_manager(tmp_path, [])
    manager.start()
    call = asyncio.create_task(manager.connections["slow"].client())
    await asyncio.sleep(0.2)
    call.cancel()  # an aborted tool call waiting for its server
    await asyncio.wait([call])
    assert await _connected(manager) == "connected"
