"""An ACP client's MCP servers (``mcpServers`` of ``session/new`` and ``session/load``) where the
session goes: a session loaded from another directory runs them there, loading an open session
again makes its new list the session's (unchanged servers keep their process), an extension's
``switch_session`` into another project restarts them in that directory, and closing the session or
the connection stops them. Real clients: the official Python SDK and acpx (npm), both driving our
``pi --mode acp`` process; each server logs ``<name> <pid> <cwd>`` when it starts. pi 1.6.0 has no
ACP mode (the pi-acp adapter accepts the servers and never connects them), so there is no reference
run to compare with."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
from pathlib import Path
from typing import Any

import pytest
from acp.schema import ClientCapabilities, EnvVariable, McpServerStdio, TextContentBlock

from tests.coding.acp.test_acp_acpx import ACPX, NODE_BIN
from tests.coding.mcp.test_mcp_switch import _alive
from tests.support.acp_client import MODEL_ID, RecordingClient, acp_pi, make_workspace
from tests.support.fakes.llm_server import FakeLLMServer
from tests.support.rpc_helpers import PYTHON, ROOT

pytestmark = pytest.mark.timeout(180)
OTHER_ID = "0190a000-0000-7000-8000-0000000000aa"


def _command(log: Path, name: str) -> tuple[str, list[str]]:
    """Our stdio echo server (it starts in milliseconds) behind ``sh``, which logs the start and then
    becomes the server."""
    return "sh", ["-c", f'echo "{name} $$ $(pwd)" >> {log}; exec "$@"', "sh", PYTHON, "-m",
                  "tests.support.fakes.mcp_echo_server"]


def _server(log: Path, name: str) -> McpServerStdio:
    command, args = _command(log, name)
    return McpServerStdio(name=name, command=command, args=args, env=[EnvVariable(name="PYTHONPATH", value=str(ROOT))])


class Log:
    """The start log: every start, and the servers alive now (``name ROOT/dir``)."""

    def __init__(self, path: Path, root: Path) -> None:
        self.path, self.root = path, root

    def starts(self) -> list[tuple[int, str]]:
        lines = self.path.read_text().splitlines() if self.path.exists() else []
        return [(int(line.split()[1]), " ".join(line.split()[::2]).replace(str(self.root), "ROOT")) for line in lines]

    def live(self) -> list[str]:
        return sorted(name for pid, name in self.starts() if _alive(pid))

    async def settled(self, expected: list[str]) -> list[str]:
        """The live servers once they are ``expected`` (servers start in the background), else as they are."""
        for _ in range(80):
            if self.live() == expected:
                break
            await asyncio.sleep(0.25)
        return self.live()


def _saved_session(session_dir: Path, cwd: Path) -> None:
    """A session recorded in ``cwd``, saved where the agent looks for sessions."""
    session_dir.mkdir(parents=True, exist_ok=True)
    header = {"type": "session", "version": 3, "id": OTHER_ID, "timestamp": "2026-01-01T00:00:00.000Z", "cwd": str(cwd)}
    message = {"type": "message", "id": "a1b2c3d4", "parentId": None, "timestamp": "2026-01-01T00:00:01.000Z",
               "message": {"role": "user", "content": [{"type": "text", "text": "earlier"}], "timestamp": 1767225601000}}
    (session_dir / "other.jsonl").write_text(json.dumps(header) + "\n" + json.dumps(message) + "\n")


@pytest.mark.slow
async def test_load_runs_servers_in_the_sessions_directory_and_replaces_them(
        tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    cwd, env = make_workspace(tmp_path, fake_llm)
    other, sessions = tmp_path / "other", tmp_path / "sessions"
    other.mkdir()
    _saved_session(sessions, other)
    log = Log(tmp_path / "started.log", tmp_path)
    a, b, c = (_server(log.path, name) for name in "abc")
    client = RecordingClient()
    async with acp_pi(client, cwd, env, "--session-dir", str(sessions)) as (conn, proc):
        await conn.initialize(protocol_version=1, client_capabilities=ClientCapabilities())
        first = (await conn.new_session(cwd=str(cwd), mcp_servers=[a])).session_id
        assert await log.settled(["a ROOT/work"]) == ["a ROOT/work"]

        await conn.load_session(cwd=str(cwd), session_id=OTHER_ID, mcp_servers=[b])  # recorded in other
        assert await log.settled(["a ROOT/work", "b ROOT/other"]) == ["a ROOT/work", "b ROOT/other"]
        b_pid = next(pid for pid, name in log.starts() if name.startswith("b "))

        await conn.load_session(cwd=str(cwd), session_id=OTHER_ID, mcp_servers=[b, c])  # open: the list grows
        assert await log.settled(["a ROOT/work", "b ROOT/other", "c ROOT/other"]) == \
            ["a ROOT/work", "b ROOT/other", "c ROOT/other"]
        await conn.load_session(cwd=str(cwd), session_id=OTHER_ID, mcp_servers=[c])  # b dropped by the client
        assert log.live() == ["a ROOT/work", "c ROOT/other"]  # b stopped before the load answered
        assert [name for _, name in log.starts()].count("b ROOT/other") == 1 and not _alive(b_pid)

        await conn.close_session(session_id=first)
        assert log.live() == ["c ROOT/other"]  # closing stopped the first session's server
        agent_pid = proc.pid
    assert await log.settled([]) == []  # the connection ended: no server left behind
    assert not _alive(agent_pid)


# --------------------------------------------------------------------------- acpx

HOP = """
def setup(pi):
    async def hop(args, ctx):
        await ctx.switch_session(args.strip())

    async def fresh(args, ctx):
        await ctx.new_session()

    pi.register_command("hop", handler=hop)
    pi.register_command("fresh", handler=fresh)
"""


@pytest.mark.slow
async def test_a_new_session_inside_keeps_the_client_servers(tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    """An extension command's ``ctx.new_session()`` (same directory) reloads the extensions, which
    drops the servers they do not register again, but not the client's: same process, still there."""
    cwd, env = make_workspace(tmp_path, fake_llm)
    (tmp_path / "hop.py").write_text(HOP)
    log = Log(tmp_path / "started.log", tmp_path)
    async with acp_pi(RecordingClient(), cwd, env, "-e", str(tmp_path / "hop.py")) as (conn, _):
        await conn.initialize(protocol_version=1, client_capabilities=ClientCapabilities())
        session_id = (await conn.new_session(cwd=str(cwd), mcp_servers=[_server(log.path, "a")])).session_id
        assert await log.settled(["a ROOT/work"]) == ["a ROOT/work"]
        reply = await conn.prompt(session_id=session_id, prompt=[TextContentBlock(type="text", text="/fresh")])
        assert reply.stop_reason == "end_turn"
        assert log.live() == ["a ROOT/work"] and len(log.starts()) == 1
    assert await log.settled([]) == []


@pytest.mark.acpx
@pytest.mark.slow
async def test_acpx_servers_follow_a_switch_into_another_project(tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    """acpx passes the servers of ``--mcp-config`` in ``session/new``; an extension command switches the
    session to one recorded in another directory: the client's server is stopped in work and started
    again in other, and nothing is left running once acpx is done."""
    cwd, env = make_workspace(tmp_path, fake_llm)
    other = tmp_path / "other"
    other.mkdir()
    saved = tmp_path / "saved"
    _saved_session(saved, other)
    log = Log(tmp_path / "started.log", tmp_path)
    command, args = _command(log.path, "cli")
    config = tmp_path / "acpx-mcp.json"
    config.write_text(json.dumps({"mcpServers": [{"name": "cli", "command": command, "args": args,
                                                  "env": [{"name": "PYTHONPATH", "value": str(ROOT)}]}]}))
    (tmp_path / "hop.py").write_text(HOP)
    agent = shlex.join([PYTHON, "-m", "pi_coding_agent", "--mode", "acp", "--provider", "fake", "--model", MODEL_ID,
                        "-e", str(tmp_path / "hop.py")])
    path = f"{NODE_BIN}:{os.environ['PATH']}"
    proc = await asyncio.create_subprocess_exec(
        str(ACPX), "--agent", agent, "--approve-all", "--format", "json", "--timeout", "120",
        "--mcp-config", str(config), "exec", f"/hop {saved / 'other.jsonl'}",
        cwd=cwd, env={**os.environ, **env, "PATH": path}, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 150)
    assert proc.returncode == 0, err.decode()
    messages: list[dict[str, Any]] = [json.loads(line) for line in out.splitlines() if line.startswith(b"{")]
    new = next(m for m in messages if m.get("method") == "session/new")
    assert [s["name"] for s in new["params"]["mcpServers"]] == ["cli"]
    answers = [m for m in messages if m.get("result", {}).get("stopReason")]
    assert answers and answers[-1]["result"]["stopReason"] == "end_turn"
    assert [name for _, name in log.starts()] == ["cli ROOT/work", "cli ROOT/other"]
    assert await log.settled([]) == []  # acpx ended the agent: its servers went with it
