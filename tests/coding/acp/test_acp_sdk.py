"""``pi --mode acp`` driven by the official ACP Python SDK's client over real pipes, with the fake LLM.

One full session (initialize, new session, a tool call needing permission granted once then
rejected, a cancel mid-stream, load of the saved session in a new process), the saved file opened
by ``pi --mode rpc`` (and by the reference pi when installed), and the client's fs and terminal.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from acp.schema import ClientCapabilities, FileSystemCapabilities, TextContentBlock

from tests.support.acp_client import MODEL_ID, RecordingClient, acp_pi, make_workspace
from tests.support.fakes.llm_server import FakeLLMServer
from tests.support.reference_pi import REFERENCE_NODE_BIN, REFERENCE_PI
from tests.support.rpc_helpers import RpcProcess

pytestmark = pytest.mark.timeout(180)


def _text(value: str) -> list[TextContentBlock]:
    return [TextContentBlock(type="text", text=value)]


def _write_call(call_id: str, path: str, content: str) -> dict[str, Any]:
    return {"content": [{"type": "toolCall", "id": call_id, "name": "write",
                         "arguments": {"path": path, "content": content}}]}


def _session_file(root: Path, session_id: str) -> Path:
    return next(p for p in root.rglob("*.jsonl") if session_id in p.read_text().split("\n", 1)[0])


def _calls(client: RecordingClient, call_id: str) -> list[dict[str, Any]]:
    return [u for u in client.updates if u.get("toolCallId") == call_id]


@pytest.mark.slow
async def test_full_session_with_permissions_cancel_and_load(tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    cwd, env = make_workspace(tmp_path, fake_llm)
    client = RecordingClient()
    async with acp_pi(client, cwd, env) as (conn, _):
        init = await conn.initialize(protocol_version=1, client_capabilities=ClientCapabilities())
        assert init.protocol_version == 1 and init.agent_capabilities is not None
        assert init.agent_capabilities.load_session is True
        new = await conn.new_session(cwd=str(cwd), mcp_servers=[])
        session_id = new.session_id
        assert new.modes is not None and new.modes.current_mode_id == "full-access"
        await conn.set_session_mode(session_id=session_id, mode_id="ask")

        # granted once: the write runs
        fake_llm.add(_write_call("call_a", "a.txt", "one\n"), {"content": [{"type": "text", "text": "wrote a"}]})
        client.permission_answers = ["allow-once"]
        first = await conn.prompt(session_id=session_id, prompt=_text("write a"))
        assert first.stop_reason == "end_turn"
        assert (cwd / "a.txt").read_text() == "one\n"
        start, *_, end = _calls(client, "call_a")
        assert start["sessionUpdate"] == "tool_call" and start["kind"] == "edit" and start["title"] == "Write a.txt"
        assert start["locations"] == [{"path": str(cwd / "a.txt")}]
        assert start["rawInput"] == {"path": "a.txt", "content": "one\n"}
        assert end["status"] == "completed"
        assert end["content"] == [{"type": "diff", "path": str(cwd / "a.txt"), "newText": "one\n"}]
        assert client.permission_requests[0]["toolCall"]["toolCallId"] == "call_a"
        assert [o["kind"] for o in client.permission_requests[0]["options"]] == [
            "allow_once", "allow_always", "reject_once"]
        assert "wrote a" in client.text()

        # rejected: the write does not happen and the model sees why
        fake_llm.add(_write_call("call_b", "b.txt", "two\n"), {"content": [{"type": "text", "text": "ok"}]})
        client.permission_answers = ["reject-once"]
        second = await conn.prompt(session_id=session_id, prompt=_text("write b"))
        assert second.stop_reason == "end_turn"
        assert not (cwd / "b.txt").exists()
        assert _calls(client, "call_b")[-1]["status"] == "failed"
        assert len(client.permission_requests) == 2
        tool_result = fake_llm.requests[-1]["body"]["messages"][-1]
        assert "rejected" in json.dumps(tool_result)

        # cancelled mid-stream
        fake_llm.add({"content": [{"type": "text", "text": "x" * 3000}], "chunkSize": 4, "chunkDelayMs": 20})
        client.chunk_seen.clear()
        turn = asyncio.ensure_future(conn.prompt(session_id=session_id, prompt=_text("long")))
        await asyncio.wait_for(client.chunk_seen.wait(), 30)
        await conn.cancel(session_id=session_id)
        assert (await asyncio.wait_for(turn, 30)).stop_reason == "cancelled"

    saved = _session_file(tmp_path, session_id)
    entries = [json.loads(line) for line in saved.read_text().splitlines()]
    messages = [e["message"] for e in entries if e["type"] == "message"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "toolResult", "assistant",
                                             "user", "assistant", "toolResult", "assistant", "user", "assistant"]
    assert messages[-1]["stopReason"] == "aborted"

    # load in a fresh process: the conversation is replayed before the response
    replayed = RecordingClient()
    async with acp_pi(replayed, cwd, env) as (conn, _):
        await conn.initialize(protocol_version=1, client_capabilities=ClientCapabilities())
        await conn.load_session(cwd=str(cwd), session_id=session_id, mcp_servers=[])
        users = [u["content"]["text"] for u in replayed.of_kind("user_message_chunk")]
        assert users == ["write a", "write b", "long"]
        assert "wrote a" in replayed.text()
        assert [u["toolCallId"] for u in replayed.of_kind("tool_call")] == ["call_a", "call_b"]
        assert _calls(replayed, "call_a")[-1]["status"] == "completed"
        assert _calls(replayed, "call_b")[-1]["status"] == "failed"
        fake_llm.add({"content": [{"type": "text", "text": "still here"}]})
        again = await conn.prompt(session_id=session_id, prompt=_text("hello again"))
        assert again.stop_reason == "end_turn" and "still here" in replayed.text()

    # the same file opens in pi --mode rpc with the whole conversation
    rpc = await RpcProcess.pi("--session", str(saved), "--provider", "fake", "--model", MODEL_ID,
                              cwd=cwd, env={**_environ(), **env})
    try:
        reply = await rpc.request({"type": "get_messages"})
        roles = [m["role"] for m in reply["data"]["messages"]]
        assert roles.count("user") == 4 and roles[-1] == "assistant"
    finally:
        await rpc.kill()


def _environ() -> dict[str, str]:
    import os

    return dict(os.environ)


@pytest.mark.reference
async def test_reference_pi_opens_a_session_saved_over_acp(tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    cwd, env = make_workspace(tmp_path, fake_llm)
    client = RecordingClient()
    async with acp_pi(client, cwd, env) as (conn, _):
        await conn.initialize(protocol_version=1, client_capabilities=ClientCapabilities())
        session_id = (await conn.new_session(cwd=str(cwd), mcp_servers=[])).session_id
        fake_llm.add(_write_call("call_r", "r.txt", "ref\n"), {"content": [{"type": "text", "text": "done"}]})
        assert (await conn.prompt(session_id=session_id, prompt=_text("write r"))).stop_reason == "end_turn"
    saved = _session_file(tmp_path, session_id)
    reference_env = {**_environ(), **env, "PATH": f"{REFERENCE_NODE_BIN}:{_environ()['PATH']}"}
    ref = await RpcProcess.spawn([str(REFERENCE_PI), "--mode", "rpc", "--session", str(saved)], cwd=cwd,
                                 env=reference_env)
    try:
        reply = await ref.request({"type": "get_messages"})
        assert [m["role"] for m in reply["data"]["messages"] if m["role"] != "system"] == [
            "user", "assistant", "toolResult", "assistant"]
        state = await ref.request({"type": "get_state"})
        assert state["data"]["sessionId"] == session_id
    finally:
        await ref.kill()


@pytest.mark.slow
async def test_client_buffers_and_terminal_serve_the_tools(tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    cwd, env = make_workspace(tmp_path, fake_llm)
    (cwd / "notes.txt").write_text("on disk\n")
    client = RecordingClient(buffers={str(cwd / "notes.txt"): "unsaved buffer\n"})
    caps = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=True)
    fake_llm.add(
        {"content": [{"type": "toolCall", "id": "r1", "name": "read", "arguments": {"path": "notes.txt"}}]},
        {"content": [{"type": "toolCall", "id": "e1", "name": "edit", "arguments": {
            "path": "notes.txt", "edits": [{"oldText": "unsaved", "newText": "edited"}]}}]},
        {"content": [{"type": "toolCall", "id": "b1", "name": "bash", "arguments": {"command": "echo from-term"}}]},
        {"content": [{"type": "text", "text": "all done"}]},
    )
    async with acp_pi(client, cwd, env) as (conn, _):
        await conn.initialize(protocol_version=1, client_capabilities=caps)
        session_id = (await conn.new_session(cwd=str(cwd), mcp_servers=[])).session_id
        assert (await conn.prompt(session_id=session_id, prompt=_text("go"))).stop_reason == "end_turn"
    bodies = [r["body"] for r in fake_llm.requests]
    results = [m for m in bodies[-1]["messages"] if m["role"] == "tool"]
    assert "unsaved buffer" in results[0]["content"]
    assert "from-term" in results[2]["content"]
    assert client.buffers[str(cwd / "notes.txt")] == "edited buffer\n"
    assert (cwd / "notes.txt").read_text() == "on disk\n"  # the editor owns the file, not pi
    assert ("write", str(cwd / "notes.txt")) in client.fs_calls
    edit_end = _calls(client, "e1")[-1]
    assert edit_end["content"] == [{"type": "diff", "path": str(cwd / "notes.txt"), "oldText": "unsaved",
                                    "newText": "edited"}]
    assert _calls(client, "b1")[-1]["content"] == [{"type": "terminal", "terminalId": "term-0"}]


@pytest.mark.parametrize("name", ["basic", "compaction"])
@pytest.mark.slow
async def test_a_session_written_by_the_reference_pi_loads_over_acp(tmp_path: Path, fake_llm: FakeLLMServer,
                                                                   name: str) -> None:
    cwd, env = make_workspace(tmp_path, fake_llm)
    fixture = Path(__file__).parents[2] / "support" / "fixtures" / "sessions" / f"{name}.jsonl"
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    lines = [json.loads(line) for line in fixture.read_text().splitlines()]
    recorded = tmp_path / "recorded-project"  # the project the reference ran in, here as an existing directory
    recorded.mkdir()
    lines[0]["cwd"] = str(recorded)
    (sessions / fixture.name).write_text("".join(json.dumps(line) + "\n" for line in lines))
    session_id = lines[0]["id"]
    saved = [e["message"] for e in lines if e["type"] == "message"]
    client = RecordingClient()
    async with acp_pi(client, cwd, env, "--session-dir", str(sessions)) as (conn, _):
        await conn.initialize(protocol_version=1, client_capabilities=ClientCapabilities())
        await conn.load_session(cwd=str(cwd), session_id=session_id, mcp_servers=[])
        here = await conn.list_sessions(cwd=str(cwd))
        everywhere = await conn.list_sessions()
    users = [m for m in saved if m["role"] == "user"]
    assert len(client.of_kind("user_message_chunk")) == len(users)
    calls = [b["id"] for m in saved if m["role"] == "assistant" for b in m["content"] if b["type"] == "toolCall"]
    assert [u["toolCallId"] for u in client.of_kind("tool_call")] == calls
    assert here.sessions == []  # the file belongs to another project directory
    summaries = [e["summary"] for e in lines if e["type"] == "compaction"]
    assert all(summary in client.text("agent_thought_chunk") for summary in summaries)  # history kept
    titles = [e["name"] for e in lines if e["type"] == "session_info"]
    assert [s.session_id for s in everywhere.sessions] == [session_id]
    assert everywhere.sessions[0].title == (titles[-1] if titles else next(
        m["content"][0]["text"] for m in saved if m["role"] == "user"))


@pytest.mark.slow
async def test_client_terminal_timeout_kills_and_releases(tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    cwd, env = make_workspace(tmp_path, fake_llm)
    client = RecordingClient()
    fake_llm.add({"content": [{"type": "toolCall", "id": "t1", "name": "bash",
                               "arguments": {"command": "echo started; sleep 30", "timeout": 1}}]},
                 {"content": [{"type": "text", "text": "gave up"}]})
    async with acp_pi(client, cwd, env) as (conn, _):
        await conn.initialize(protocol_version=1, client_capabilities=ClientCapabilities(terminal=True))
        session_id = (await conn.new_session(cwd=str(cwd), mcp_servers=[])).session_id
        assert (await conn.prompt(session_id=session_id, prompt=_text("wait"))).stop_reason == "end_turn"
    result = next(m for m in fake_llm.requests[-1]["body"]["messages"] if m["role"] == "tool")
    assert "started" in result["content"] and "Command timed out after 1 seconds" in result["content"]
    proc, _ = client.terminals["term-0"]
    assert proc.returncode is not None  # killed by terminal/kill, then released
    assert _calls(client, "t1")[-1]["status"] == "failed"


@pytest.mark.slow
async def test_mcp_servers_from_the_client_join_the_session(tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    """A stdio server the editor passes in ``session/new`` connects through our MCP support; its tools are
    reached as pi's default exposure has it, from a codemode script."""
    from acp.schema import McpServerStdio

    from tests.support.rpc_helpers import PYTHON, ROOT

    cwd, env = make_workspace(tmp_path, fake_llm)
    server = McpServerStdio(name="fake", command=PYTHON, args=[str(ROOT / "tests" / "support" / "fakes" / "mcp_server.py"),
                                                                "stdio"], env=[])
    script = "const r = await tools.mcp__fake__echo({text: 'from acp'});\ntext(r.content[0].text);"
    fake_llm.add({"content": [{"type": "toolCall", "id": "cm", "name": "codemode", "arguments": {"code": script}}]},
                 {"content": [{"type": "text", "text": "done"}]})
    client = RecordingClient()
    async with acp_pi(client, cwd, env) as (conn, _):
        await conn.initialize(protocol_version=1, client_capabilities=ClientCapabilities())
        session_id = (await conn.new_session(cwd=str(cwd), mcp_servers=[server])).session_id
        await conn.prompt(session_id=session_id, prompt=_text("/mcp"))  # answered once the server is connected
        reply = await conn.prompt(session_id=session_id, prompt=_text("use the server"))
    assert reply.stop_reason == "end_turn"
    tool_result = fake_llm.requests[-1]["body"]["messages"][-1]
    assert tool_result["role"] == "tool" and "echo: from acp" in json.dumps(tool_result["content"])
