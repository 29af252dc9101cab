"""The MCP client against real FastMCP servers, stdio and streamable HTTP on 127.0.0.1: lifecycle,
list_changed, progress, timeouts, crashes and reconnects, server logs, garbage on stdout."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from pi_coding_agent.coding.mcp.config import ServerEntry
from pi_coding_agent.coding.mcp.connection import ServerConnection
from pi_coding_agent.coding.mcp.log import ServerLog
from tests.support.mcp_helpers import FAKE_SERVER, free_port, stdio_server
from tests.support.rpc_helpers import PYTHON, ROOT

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen([PYTHON, *FAKE_SERVER, "http", str(port)], cwd=ROOT, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    import socket

    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            break
        time.sleep(0.2)
    yield f"http://127.0.0.1:{port}/mcp"
    os.killpg(proc.pid, 9)
    proc.wait()


class Events:
    def __init__(self) -> None:
        self.tools: list[list[str]] = []
        self.states: list[str] = []


@contextlib.asynccontextmanager
async def connect(tmp_path: Path, config: dict[str, Any]) -> AsyncIterator[tuple[ServerConnection, Events]]:
    events = Events()
    entry = ServerEntry("fake", config, "test", "global")
    connection = ServerConnection(entry, ROOT, ServerLog(tmp_path / "mcp.log"),
                                  lambda c: events.tools.append([t["name"] for t in c.tools]),
                                  lambda c: events.states.append(c.state))
    await connection.start()
    try:
        yield connection, events
    finally:
        await connection.close()


@pytest.fixture(params=["stdio", "http"])
def config(request: pytest.FixtureRequest) -> dict[str, Any]:
    if request.param == "stdio":
        return stdio_server()
    return {"url": request.getfixturevalue("http_url")}


@pytest.mark.slow
async def test_connects_lists_tools_and_calls(tmp_path: Path, config: dict[str, Any]) -> None:
    async with connect(tmp_path, config) as (connection, events):
        assert connection.state == "connected", connection.error
        assert "echo" in events.tools[0] and connection.instructions == "Fake tools for tests.\nSecond line."
        assert (await connection.call_tool("add", {"a": 2, "b": 3}, None))["structuredContent"] == {"sum": 5}


async def short_timeout(connection: ServerConnection, seconds: float) -> None:
    """The server's start-up counts against ``timeout`` too, so tests shorten it once connected."""
    (await connection.client()).timeout_s = seconds


@pytest.mark.slow
async def test_progress_resets_the_timeout_and_is_reported(tmp_path: Path, config: dict[str, Any]) -> None:
    async with connect(tmp_path, config) as (connection, _):
        await short_timeout(connection, 0.5)
        notes: list[dict[str, Any]] = []
        result = await connection.call_tool("progress", {"steps": 4, "delay": 0.3}, notes.append)
        assert result["content"][0]["text"] == "done"
        assert [n["message"] for n in notes] == ["step 1", "step 2", "step 3", "step 4"]


@pytest.mark.slow
async def test_a_hanging_call_times_out(tmp_path: Path, config: dict[str, Any]) -> None:
    async with connect(tmp_path, config) as (connection, _):
        await short_timeout(connection, 0.5)
        with pytest.raises(Exception, match="MCP request timed out after 500ms"):
            await connection.call_tool("hang", {}, None)
        assert (await connection.call_tool("echo", {"text": "still"}, None))["content"][0]["text"] == "echo: still"


@pytest.mark.slow
async def test_list_changed_adds_and_withdraws_tools(tmp_path: Path) -> None:
    async with connect(tmp_path, stdio_server()) as (connection, events):
        await connection.call_tool("grow", {}, None)  # returns once the changed list is known
        assert "extra" in events.tools[-1] and "add" not in events.tools[-1]


@pytest.mark.slow
async def test_crash_mid_call_disconnects_then_the_next_call_reconnects(tmp_path: Path) -> None:
    async with connect(tmp_path, stdio_server()) as (connection, events):
        with pytest.raises(Exception, match="MCP connection closed"):
            await connection.call_tool("crash", {}, None)
        assert connection.state == "disconnected"
        assert (await connection.call_tool("echo", {"text": "back"}, None))["content"][0]["text"] == "echo: back"
        assert events.states[-2:] == ["disconnected", "connected"] and connection.state == "connected"


@pytest.mark.slow
async def test_server_log_messages_reach_mcp_log(tmp_path: Path, config: dict[str, Any]) -> None:
    async with connect(tmp_path, config) as (connection, _):
        await connection.call_tool("shout", {"text": "one\ntwo"}, None)
    line = (tmp_path / "mcp.log").read_text()
    assert line.endswith(" [fake] warning shouting:\n    one\n    two\n")
    assert line[:4].isdigit() and line[23] == "Z"


@pytest.mark.slow
async def test_garbage_on_stdout_is_logged_and_the_server_still_works(tmp_path: Path) -> None:
    async with connect(tmp_path, stdio_server(env={"MCP_FAKE_GARBAGE": "1"})) as (connection, _):
        assert connection.state == "connected"
    assert "non-JSON line on stdout: this is not json" in (tmp_path / "mcp.log").read_text()


@pytest.mark.slow
async def test_a_server_that_never_initializes_fails_with_its_stderr(tmp_path: Path) -> None:
    script = "import sys, time; print('booting', file=sys.stderr, flush=True); time.sleep(60)"
    async with connect(tmp_path, {"command": PYTHON, "args": ["-c", script], "timeout": 1}) as (connection, _):
        assert connection.state == "failed"
        assert connection.error == "MCP request timed out after 1000ms\nbooting"


@pytest.mark.slow
async def test_closing_kills_the_whole_process_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    wrapper = f"sleep 300 & echo $! > {pid_file}; exec {PYTHON} {' '.join(FAKE_SERVER)} stdio"
    async with connect(tmp_path, {"command": "sh", "args": ["-c", wrapper], "cwd": str(ROOT)}) as (connection, _):
        assert connection.state == "connected", connection.error
        child = int(pid_file.read_text())
    for _ in range(50):
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        with contextlib.suppress(ChildProcessError):
            os.waitpid(child, os.WNOHANG)
        await asyncio.sleep(0.1)
    else:
        pytest.fail("the wrapper's child outlived the server")
