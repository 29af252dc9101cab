"""MCP end to end: the real ``pi --mode rpc`` over pipes, a FastMCP server over stdio, the fake LLM
calling ``mcp__<server>__<tool>`` (docs/mcp.md)."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from tests.support.fakes.llm_server import FakeLLMServer
from tests.support.mcp_helpers import (
    McpWorkspace,
    declared_tools,
    run_prompt,
    stdio_server,
    tool_call,
    tool_end,
)
from tests.support.rpc_helpers import RpcProcess

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def ws(tmp_path: Path, fake_llm: FakeLLMServer) -> McpWorkspace:
    return McpWorkspace(tmp_path, fake_llm)


Start = Callable[..., Awaitable[RpcProcess]]


@pytest.fixture
async def start(ws: McpWorkspace) -> AsyncIterator[Start]:
    """Spawns ``pi --mode rpc`` in the workspace; every process is killed after the test."""
    started: list[RpcProcess] = []

    async def spawn(*args: str, session: bool = False) -> RpcProcess:
        started.append(await ws.pi(*args, session=session))
        return started[-1]

    yield spawn
    for proc in started:
        await proc.kill()


@pytest.mark.slow
async def test_direct_tool_is_declared_and_called_through_the_model(ws: McpWorkspace, start: Start) -> None:
    ws.servers({"fake": stdio_server(exposure="direct")})
    ws.llm.add(tool_call("mcp__fake__echo", {"text": "hi"}), {"content": [{"type": "text", "text": "done"}]})
    pi = await start()
    records = await run_prompt(pi, "use the tool")
    end = tool_end(records)
    assert end["toolName"] == "mcp__fake__echo"
    assert end["isError"] is False
    assert end["result"]["content"] == [{"type": "text", "text": "echo: hi"}]
    assert end["result"]["details"] == {"server": "fake", "tool": "echo"}
    assert end["result"]["structuredContent"] == {"content": [{"type": "text", "text": "echo: hi"}],
                                                  "structuredContent": {"result": "echo: hi"}, "isError": False}
    first = ws.llm.requests[0]
    assert "mcp__fake__echo" in declared_tools(first)
    schema = next(t["function"]["parameters"] for t in first["body"]["tools"] if t["function"]["name"] == "mcp__fake__echo")
    assert schema["properties"]["text"]["type"] == "string"
    tool_message = ws.llm.requests[1]["body"]["messages"][-1]
    assert tool_message["role"] == "tool" and "echo: hi" in json.dumps(tool_message["content"])


@pytest.mark.slow
async def test_big_result_is_cut_in_the_middle_and_saved(ws: McpWorkspace, start: Start) -> None:
    ws.servers({"fake": stdio_server(exposure="direct")})
    ws.llm.add(tool_call("mcp__fake__big", {}), {"content": [{"type": "text", "text": "done"}]})
    pi = await start()
    end = tool_end(await run_prompt(pi, "big"))
    text = end["result"]["content"][0]["text"]
    assert text.startswith("Warning: truncated output (original token count: 50500)\nTotal output lines: 2000\n\n")
    assert "chars truncated…" in text
    saved = end["result"]["details"]["fullOutputPath"]
    assert f"[Full output: {saved} (read it with offset/limit)]" in text
    assert len(Path(saved).read_text()) == 202_000
    assert os.stat(saved).st_mode & 0o777 == 0o600
    assert len(text.encode()) < 21 * 1024
    os.unlink(saved)


@pytest.mark.slow
async def test_error_image_and_unknown_server_tool(ws: McpWorkspace, start: Start) -> None:
    ws.servers({"fake": stdio_server(exposure="direct")})
    ws.llm.add({"content": [{"type": "toolCall", "id": "c1", "name": "mcp__fake__fail", "arguments": {}},
                            {"type": "toolCall", "id": "c2", "name": "mcp__fake__picture", "arguments": {}}]},
               {"content": [{"type": "text", "text": "done"}]})
    pi = await start()
    records = await run_prompt(pi, "two")
    ends = {r["toolCallId"]: r for r in records if r.get("type") == "tool_execution_end"}
    assert ends["c1"]["isError"] is True
    assert "deliberate failure" in ends["c1"]["result"]["content"][0]["text"]
    picture = ends["c2"]["result"]["content"]
    assert picture[0] == {"type": "text", "text": "a red pixel"}
    assert picture[1]["type"] == "image" and picture[1]["mimeType"] == "image/png"


@pytest.mark.slow
async def test_abort_cancels_the_call_at_the_server(ws: McpWorkspace, start: Start) -> None:
    marker = ws.root / "cancelled.txt"
    ws.servers({"fake": stdio_server(exposure="direct", env={"MCP_FAKE_MARKER": str(marker)})})
    ws.llm.add(tool_call("mcp__fake__hang", {}))
    pi = await start()
    await pi.send({"type": "prompt", "message": "hang", "id": "run"})
    await pi.read_until(lambda r: r.get("type") == "tool_execution_start")
    await pi.send({"type": "abort", "id": "stop"})
    records = await pi.read_until(lambda r: r.get("type") == "agent_settled")
    end = tool_end(records)
    assert end["isError"] is True
    for _ in range(100):
        if marker.exists():
            break
        import asyncio

        await asyncio.sleep(0.1)
    assert marker.read_text() == "cancelled\n"


@pytest.mark.slow
async def test_mcp_command_status_and_get_commands(ws: McpWorkspace, start: Start) -> None:
    ws.servers({"fake": stdio_server(exposure="direct"), "gone": {"command": "/nonexistent/server"},
                "bad name": {"command": "x"}, "old": {"type": "sse", "url": "http://127.0.0.1:1/sse"}})
    pi = await start()
    commands = (await pi.request({"type": "get_commands", "id": "c"}))["data"]["commands"]
    assert [c["name"] for c in commands][:2] == ["llama", "mcp"]  # pi lists its built-ins first, llama.cpp's first
    assert commands[1] == {"name": "mcp", "description": "Manage MCP servers: sign in, reconnect, enable or "
                           "disable, and change exposure", "source": "extension",
                           "sourceInfo": {"path": "builtin:mcp", "source": "builtin", "scope": "temporary",
                                          "origin": "top-level"}}
    await pi.send({"type": "prompt", "message": "/mcp", "id": "m"})
    records = await pi.read_until(lambda r: r.get("id") == "m")
    assert records[-1]["data"] == {"disposition": "handled"}
    notes = [r for r in records if r.get("method") == "notify"]
    status = notes[-1]["message"]
    mcp_json = ws.agent_dir / "mcp.json"
    assert status.splitlines()[0] == "fake: connected, 11 tools (direct)"
    assert "gone: failed (codemode)\n    spawn /nonexistent/server ENOENT" in status
    assert f'config error: {mcp_json}: invalid server name "bad name" (use letters, digits, "_" and "-")' in status
    assert "legacy SSE transport is not supported" in status
    attention = next(n for n in notes if n["message"].startswith("MCP servers need attention:"))
    assert attention["notifyType"] == "warning" and "  gone: failed: spawn /nonexistent/server ENOENT" in attention["message"]


@pytest.mark.slow
async def test_no_mcp_and_disabled_builtin(ws: McpWorkspace, start: Start) -> None:
    ws.servers({"fake": stdio_server(exposure="direct")})
    pi = await start("--no-mcp")
    commands = (await pi.request({"type": "get_commands", "id": "c"}))["data"]["commands"]
    assert all(c["name"] != "mcp" for c in commands)
    (ws.agent_dir / "settings.json").write_text(json.dumps({"extensions": ["-builtin:mcp"]}))
    ws.llm.add({"content": [{"type": "text", "text": "hello"}]})
    pi2 = await start()
    await run_prompt(pi2, "hi")
    assert not any(name.startswith("mcp__") for name in declared_tools(ws.llm.requests[-1]))


@pytest.mark.slow
async def test_deferred_tools_load_through_tool_search_and_stay_declared_after_resume(
        ws: McpWorkspace, start: Start) -> None:
    ws.servers({"fake": stdio_server(exposure="deferred", description="Fake test tools")})
    ws.llm.add(tool_call("tool_search", {"query": "echo text"}, "s1"),
               tool_call("mcp__fake__echo", {"text": "x"}, "e1"),
               {"content": [{"type": "text", "text": "done"}]}, {"content": [{"type": "text", "text": "again"}]})
    session_dir = ws.root / "sessions"
    pi = await start("--session-dir", str(session_dir), session=True)
    records = await run_prompt(pi, "find a tool")
    search = tool_end(records)
    loaded = ["mcp__fake__echo", "mcp__fake__shout", "mcp__fake__big", "mcp__fake__huge"]
    assert search["result"]["details"] == {"loaded": loaded}
    assert search["result"]["content"][0]["text"].startswith(
        "Loaded 4 tools. They are available from your next call:\n- mcp__fake__echo: Echo the text back.")
    patches = [r["message"] for r in records if r.get("type") == "message_end" and r["message"]["role"] == "system"]
    assert [t["name"] for t in patches[1]["toolsAdded"]] == loaded
    first, second = ws.llm.requests[0], ws.llm.requests[1]
    assert declared_tools(first)[-1] == "tool_search" and not any(n.startswith("mcp__") for n in declared_tools(first))
    assert declared_tools(second)[-4:] == loaded
    system = first["body"]["messages"][0]["content"]
    assert system.endswith("<mcp_servers>\nMCP servers whose tools are not declared to you. Load the tools of "
                           "`tool_search` servers with `tool_search`.\n- mcp__fake (tool_search): Fake test tools\n"
                           "</mcp_servers>")
    ends = [r for r in records if r.get("type") == "tool_execution_end"]
    assert ends[1]["result"]["content"] == [{"type": "text", "text": "echo: x"}]
    await pi.kill()
    resumed = await start("--session-dir", str(session_dir), "--continue", session=True)
    await run_prompt(resumed, "again")
    assert "mcp__fake__echo" in declared_tools(ws.llm.requests[-1])


@pytest.mark.slow
async def test_list_changed_reaches_the_next_prompt(ws: McpWorkspace, start: Start) -> None:
    ws.servers({"fake": stdio_server(exposure="direct")})
    ws.llm.add(tool_call("mcp__fake__grow", {}), {"content": [{"type": "text", "text": "grown"}]},
               {"content": [{"type": "text", "text": "next"}]})
    pi = await start()
    await run_prompt(pi, "grow")
    await run_prompt(pi, "next")
    tools = declared_tools(ws.llm.requests[-1])
    assert "mcp__fake__extra" in tools and "mcp__fake__add" not in tools


@pytest.mark.slow
async def test_bad_input_gets_clear_errors_and_the_session_keeps_working(
        ws: McpWorkspace, start: Start) -> None:
    from tests.support.rpc_helpers import PYTHON, ROOT

    ws.servers({"fake": stdio_server(exposure="direct"),
                "raw": {"command": PYTHON, "args": ["-m", "tests.support.fakes.mcp_raw_server"], "cwd": str(ROOT),
                        "exposure": "direct"}})
    ws.llm.add({"content": [{"type": "toolCall", "id": "bad_args", "name": "mcp__fake__add", "arguments": {"a": "x"}},
                            {"type": "toolCall", "id": "weird", "name": "mcp__raw__weird", "arguments": {"x": 1}},
                            {"type": "toolCall", "id": "bare", "name": "mcp__raw__bare", "arguments": {}},
                            {"type": "toolCall", "id": "liar", "name": "mcp__raw__liar", "arguments": {}},
                            {"type": "toolCall", "id": "huge", "name": "mcp__fake__huge", "arguments": {"megabytes": 50}}]},
               {"content": [{"type": "text", "text": "survived"}]}, {"content": [{"type": "text", "text": "still here"}]})
    pi = await start()
    records = await run_prompt(pi, "break things")
    ends = {r["toolCallId"]: r for r in records if r.get("type") == "tool_execution_end"}
    assert ends["bad_args"]["isError"] is True
    assert ends["bad_args"]["result"]["content"][0]["text"] == (
        'Validation failed for tool "mcp__fake__add":\n  - b: missing\n  - a: expected integer, got string\n\n'
        'Received arguments:\n{\n  "a": "x"\n}')
    bare = ends["bare"]["result"]["content"][0]["text"]
    assert bare.startswith('called {"_meta": {"progressToken": ') and bare.endswith('"arguments": {}, "name": "bare"}')
    assert ends["weird"]["result"]["content"][0]["text"] == "Tool mcp__raw__weird not found"
    skipped = [r["message"] for r in records if r.get("method") == "notify" and "skipped" in r["message"]]
    assert skipped == ['MCP server "raw": tool "weird" skipped, its inputSchema.properties.x.type 12 is not a '
                       'JSON Schema type.']
    status = await pi.request({"type": "prompt", "message": "/mcp", "id": "m"})
    assert status["data"] == {"disposition": "handled"}
    assert ends["liar"]["isError"] is True
    assert ends["liar"]["result"]["content"][0]["text"] == "MCP tool raw/liar returned an invalid result"
    huge = ends["huge"]["result"]
    assert len(huge["content"][0]["text"].encode()) < 21 * 1024
    assert Path(huge["details"]["fullOutputPath"]).stat().st_size == 50 * 1024 * 1024
    os.unlink(huge["details"]["fullOutputPath"])
    assert all(line.startswith(b"{") for line in pi.raw_lines)
    await run_prompt(pi, "again")
    assert ws.llm.requests[-1]["body"]["messages"][-1]["content"] == [{"type": "text", "text": "again"}]


@pytest.mark.slow
async def test_extensions_register_servers_and_gate_calls_by_annotations(
        ws: McpWorkspace, start: Start) -> None:
    """No mcp.json at all: an extension registers the server; its tool_call gate reads the annotations."""
    import textwrap

    server = stdio_server(exposure="direct")
    ext = ws.cwd / "gate.py"
    ext.write_text(textwrap.dedent(f"""
        def setup(pi):
            pi.register_mcp_server("fake", {server!r})

            def gate(event, ctx):
                tool = next(t for t in pi.get_all_tools() if t["name"] == event["toolName"])
                if not tool.get("annotations", {{}}).get("readOnlyHint"):
                    return {{"block": True, "reason": "only read-only MCP tools"}}
                return None
            pi.on("tool_call", gate)
    """))
    ws.llm.add({"content": [{"type": "toolCall", "id": "ro", "name": "mcp__fake__echo", "arguments": {"text": "a"}},
                            {"type": "toolCall", "id": "rw", "name": "mcp__fake__add", "arguments": {"a": 1, "b": 2}}]},
               {"content": [{"type": "text", "text": "done"}]})
    pi = await start("-e", str(ext))
    records = await run_prompt(pi, "go")
    ends = {r["toolCallId"]: r for r in records if r.get("type") == "tool_execution_end"}
    assert ends["ro"]["result"]["content"] == [{"type": "text", "text": "echo: a"}]
    assert ends["rw"]["isError"] is True and ends["rw"]["result"]["content"][0]["text"] == "only read-only MCP tools"


@pytest.mark.slow
async def test_first_prompt_waits_at_most_10_s_for_a_direct_server(ws: McpWorkspace, start: Start) -> None:
    """pi's 10 s, shortened here through ``PI_MCP_STARTUP_WAIT_S``: the same wait, then the notice."""
    import time

    from tests.support.rpc_helpers import PYTHON

    limit = 2.0
    ws.env["PI_MCP_STARTUP_WAIT_S"] = str(limit)
    ws.servers({"mute": {"command": PYTHON, "args": ["-c", "import time; time.sleep(120)"], "exposure": "direct"},
                "lazy": stdio_server(exposure="deferred")})
    ws.llm.add({"content": [{"type": "text", "text": "hi"}]})
    pi = await start()
    began = time.monotonic()
    records = await run_prompt(pi, "hello")
    waited = time.monotonic() - began
    notes = [r["message"] for r in records if r.get("method") == "notify"]
    assert "MCP servers are still connecting; their tools become available once connected." in notes
    assert limit - 0.5 < waited < 40
    assert not any(n.startswith("mcp__mute") for n in declared_tools(ws.llm.requests[0]))


@pytest.mark.slow
async def test_a_killed_agent_leaves_no_server_behind(ws: McpWorkspace, start: Start) -> None:
    import asyncio
    import signal

    pid_file = ws.root / "server.pid"
    ws.servers({"fake": stdio_server(exposure="direct", env={"MCP_FAKE_PIDFILE": str(pid_file)})})
    ws.llm.add({"content": [{"type": "text", "text": "hi"}]})
    pi = await start()
    await run_prompt(pi, "hello")  # the direct server connected before the first request
    server_pid = int(pid_file.read_text())
    os.kill(pi.proc.pid, signal.SIGKILL)
    await pi.proc.wait()
    for _ in range(100):
        try:
            os.kill(server_pid, 0)
        except ProcessLookupError:
            return
        await asyncio.sleep(0.1)
    pytest.fail(f"MCP server {server_pid} outlived the killed agent")


@pytest.mark.slow
async def test_a_server_without_exposure_is_reached_through_codemode(ws: McpWorkspace, start: Start) -> None:
    """pi's default exposure: the server's tools stay off the declared list and a script calls them."""
    ws.servers({"fake": stdio_server()})
    script = "const r = await tools.mcp__fake__echo({text: 'from a script'});\ntext(r.content[0].text);"
    ws.llm.add(tool_call("codemode", {"code": script}), {"content": [{"type": "text", "text": "done"}]})
    pi = await start()
    await pi.send({"type": "prompt", "message": "/mcp", "id": "m"})  # waits until the server is connected
    await pi.read_until(lambda r: r.get("id") == "m")
    records = await run_prompt(pi, "use a script")
    ends = [r for r in records if r.get("type") == "tool_execution_end"]
    inner = next(e for e in ends if e["toolName"] == "mcp__fake__echo")
    outer = next(e for e in ends if e["toolName"] == "codemode")
    assert inner["toolCallId"].startswith(outer["toolCallId"] + "/")
    assert outer["isError"] is False
    assert outer["result"]["content"][0]["text"].startswith("Script completed")
    assert outer["result"]["content"][1] == {"type": "text", "text": "echo: from a script"}
    assert outer["result"]["details"]["calls"][0]["name"] == "mcp__fake__echo"
    declared = declared_tools(ws.llm.requests[0])
    assert "codemode" in declared and "mcp__fake__echo" not in declared


@pytest.mark.slow
async def test_disabled_tool_search_builtin_is_not_activated(ws: McpWorkspace, start: Start) -> None:
    """``-builtin:tool-search`` leaves deferred servers without ``tool_search`` (pi then warns)."""
    ws.servers({"fake": stdio_server(exposure="deferred")})
    (ws.agent_dir / "settings.json").write_text(json.dumps({"extensions": ["-builtin:tool-search"]}))
    ws.llm.add({"content": [{"type": "text", "text": "hello"}]})
    pi = await start()
    await run_prompt(pi, "hi")
    assert "tool_search" not in declared_tools(ws.llm.requests[-1])
