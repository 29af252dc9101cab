"""MCP roots: the client offers the ``roots`` capability and answers ``roots/list`` with the session's
working directory, as pi 1.6.0 does. Servers nobody here wrote, installed by
scripts/install_test_deps.sh: server-everything offers ``get-roots-list`` only to a client with
roots, server-filesystem started without a directory takes the roots as its allowed directories.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli_sides import pi_command
from tests.support.fakes.llm_server import FakeLLMServer
from tests.support.mcp_helpers import tool_call
from tests.support.rpc_compare import Workspace

SERVER_DIR = Path(os.environ.get("PI_MCP_TEST_SERVERS", Path.home() / ".cache" / "pi-mcp-test"))
EVERYTHING = SERVER_DIR / "node_modules" / ".bin" / "mcp-server-everything"
FILESYSTEM = SERVER_DIR / "node_modules" / ".bin" / "mcp-server-filesystem"
TIME = SERVER_DIR / "venv" / "bin" / "mcp-server-time"
SERVERS = {"everything": {"command": str(EVERYTHING), "args": ["stdio"]},
           "fs": {"command": str(FILESYSTEM), "exposure": "direct"},
           "time": {"command": str(TIME)}}

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow,  # three registry servers per start
              pytest.mark.skipif(not all(p.exists() for p in (EVERYTHING, FILESYSTEM, TIME)),
                                 reason="the registry MCP servers are not installed: bash scripts/install_test_deps.sh")]
needs_reference = pytest.mark.reference  # skipped, with the reason, without it (tests/conftest.py)


def _mcp_list(kind: str, root: Path) -> str:
    """``pi mcp list`` in a directory whose agent dir names the three servers."""
    with FakeLLMServer() as server:
        ws = Workspace.create(root / kind, server.url)
    (ws.agent_dir / "mcp.json").write_text(json.dumps({"mcpServers": SERVERS}))
    command, env = pi_command(kind, ["mcp", "list"], ws.env)
    done = subprocess.run(command, env=env, cwd=ws.cwd, capture_output=True, text=True, timeout=120)
    return done.stdout


async def _allowed_directories(kind: str, root: Path) -> list[dict[str, Any]]:
    """What server-filesystem, started without a directory, allows: the session's cwd."""
    with FakeLLMServer() as server:
        server.add(tool_call("mcp__fs__list_allowed_directories", {}), {"content": [{"type": "text", "text": "ok"}]})
        ws = Workspace.create(root / kind, server.url)
        (ws.agent_dir / "mcp.json").write_text(json.dumps({"mcpServers": {"fs": SERVERS["fs"]}}))
        (ws.cwd / "notes.txt").write_text("x")
        pi = await ws.spawn(kind, "--no-session")
        try:
            await pi.send({"type": "prompt", "message": "go", "id": "p"})
            records = await pi.read_until(lambda r: r.get("type") == "agent_settled")
        finally:
            await pi.kill()
    end = next(r for r in records if r.get("type") == "tool_execution_end")
    return json.loads(json.dumps(end["result"]["content"]).replace(str(ws.cwd.resolve()), "<cwd>"))


async def test_server_filesystem_is_allowed_the_session_cwd(tmp_path: Path) -> None:
    content = await _allowed_directories("ours", tmp_path)
    assert content == [{"type": "text", "text": "Allowed directories:\n<cwd>"}]


def test_get_roots_list_is_offered(tmp_path: Path) -> None:
    assert "get-roots-list" in _mcp_list("ours", tmp_path)


@needs_reference
async def test_roots_match_the_reference(tmp_path: Path) -> None:
    assert _mcp_list("ours", tmp_path) == _mcp_list("reference", tmp_path)
    assert await _allowed_directories("ours", tmp_path / "b") == await _allowed_directories("reference", tmp_path / "b")
