"""The in-process SDK: one session per call, the same events as RPC, custom tools and extensions in
process, and sessions in one event loop isolated from each other (coding/sdk.py, docs/sdk.md)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from pi_coding_agent import create_agent_session
from pi_coding_agent.agent.tool import ToolResult
from pi_coding_agent.coding.agent_session import AgentSession
from pi_coding_agent.coding.errors import SessionError
from pi_coding_agent.coding.sdk import FunctionTool
from tests.support.fakes.llm_server import FakeLLMServer
from tests.support.rpc_helpers import RpcProcess


def agent_dir_for(root: Path, server: FakeLLMServer, provider: str, model_id: str) -> Path:
    """An agent directory whose models.json routes ``provider`` to ``server``."""
    agent_dir = root / "agent"
    agent_dir.mkdir(parents=True)
    (agent_dir / "models.json").write_text(json.dumps({"providers": {provider: {
        "baseUrl": f"{server.url}/v1", "api": "openai-completions", "apiKey": "dummy",
        "models": [{"id": model_id, "contextWindow": 100000, "maxTokens": 4096}]}}}))
    return agent_dir


def workdir(root: Path, name: str = "work") -> Path:
    cwd = root / name
    cwd.mkdir(parents=True)
    return cwd


async def run_prompt(session: AgentSession, text: str) -> list[dict[str, Any]]:
    """Prompt and collect every event up to and including ``agent_settled``."""
    stream = session.events(until_settled=True)
    assert await session.prompt(text) == {"disposition": "started"}
    return [event async for event in stream]


def without_updates(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events if e["type"] != "message_update"]


async def test_prompt_streams_the_events_and_answers(fake_llm: FakeLLMServer, tmp_path: Path) -> None:
    fake_llm.add({"content": [{"type": "text", "text": "hello from the fake"}]})
    session = await create_agent_session(cwd=workdir(tmp_path), agent_dir=agent_dir_for(tmp_path, fake_llm, "fake", "m1"),
                                         provider="fake", model="m1", in_memory=True)
    try:
        events = await run_prompt(session, "hi")
    finally:
        await session.shutdown()
    assert without_updates(events)[:4] == ["agent_start", "turn_start", "message_start", "message_end"]
    assert without_updates(events)[-2:] == ["agent_end", "agent_settled"]
    deltas = [e["assistantMessageEvent"]["delta"] for e in events
              if e["type"] == "message_update" and e["assistantMessageEvent"]["type"] == "text_delta"]
    assert "".join(deltas) == "hello from the fake"
    assert session.get_last_assistant_text() == "hello from the fake"
    assert fake_llm.requests[0]["body"]["model"] == "m1"


@pytest.mark.slow
async def test_events_match_the_rpc_process(fake_llm: FakeLLMServer, tmp_path: Path) -> None:
    """The SDK subscriber sees what ``pi --mode rpc`` writes, event for event (timestamps aside)."""
    agent_dir = agent_dir_for(tmp_path, fake_llm, "fake", "m1")
    cwd = workdir(tmp_path)
    fake_llm.add({"content": [{"type": "text", "text": "same answer"}]},
                 {"content": [{"type": "text", "text": "same answer"}]})
    session = await create_agent_session(cwd=cwd, agent_dir=agent_dir, provider="fake", model="m1", in_memory=True)
    try:
        ours = await run_prompt(session, "hi")
    finally:
        await session.shutdown()
    env = {"PI_CODING_AGENT_DIR": str(agent_dir), "HOME": str(tmp_path)}
    proc = await RpcProcess.pi("--provider", "fake", "--model", "m1", "--no-session", cwd=cwd, env=env)
    try:
        await proc.send({"id": "1", "type": "prompt", "message": "hi"})
        records = await proc.read_until(lambda r: r.get("type") == "agent_settled")
    finally:
        await proc.kill()
    rpc = [r for r in records if r.get("type") != "response"]
    assert [e["type"] for e in ours] == [e["type"] for e in rpc]
    assert [e.get("assistantMessageEvent", {}).get("delta") for e in ours] == \
        [e.get("assistantMessageEvent", {}).get("delta") for e in rpc]


async def test_custom_tool_and_in_process_extension(fake_llm: FakeLLMServer, tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []
    tool = FunctionTool("lookup", "Look a word up", lambda params: f"meaning of {params['word']}",
                        {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]})
    ended: list[str] = []

    def setup(pi: Any) -> None:
        pi.on("tool_execution_end", lambda event, ctx: ended.append(event["toolName"]))

    fake_llm.add({"content": [{"type": "toolCall", "id": "c1", "name": "lookup", "arguments": {"word": "pi"}}]},
                 {"content": [{"type": "text", "text": "done"}]})
    session = await create_agent_session(cwd=workdir(tmp_path), agent_dir=agent_dir_for(tmp_path, fake_llm, "fake", "m1"),
                                         provider="fake", model="m1", in_memory=True, custom_tools=[tool],
                                         extensions=[setup], load_resources=False)
    session.subscribe(seen.append)
    try:
        await run_prompt(session, "look up pi")
    finally:
        await session.shutdown()
    results = [m for m in session.get_messages() if m["role"] == "toolResult"]
    assert [r["content"][0]["text"] for r in results] == ["meaning of pi"]
    assert ended == ["lookup"]
    declared = [t["function"]["name"] for t in fake_llm.requests[0]["body"]["tools"]]
    assert "lookup" in declared and "read" in declared
    assert any(e["type"] == "tool_execution_end" and e["toolName"] == "lookup" for e in seen)


async def test_user_bash_handlers_replace_or_refuse_the_command(fake_llm: FakeLLMServer, tmp_path: Path) -> None:
    """``user_bash`` fails closed: a raising handler refuses the command (reported), a ``result`` replaces it."""
    def on_user_bash(event: dict[str, Any], ctx: Any) -> dict[str, Any] | None:
        if event["command"] == "refuse me":
            raise RuntimeError("not this one")
        if event["command"] == "replace me":
            return {"result": {"output": "replaced\n", "exitCode": 0, "cancelled": False, "truncated": False}}
        return None

    session = await create_agent_session(cwd=workdir(tmp_path), agent_dir=agent_dir_for(tmp_path, fake_llm, "fake", "m1"),
                                         provider="fake", model="m1", in_memory=True, load_resources=False,
                                         extensions=[lambda pi: pi.on("user_bash", on_user_bash)])
    seen: list[dict[str, Any]] = []
    session.subscribe(seen.append)
    try:
        replaced = await session.bash("replace me", False, lambda _: None)
        with pytest.raises(SessionError, match="not this one"):
            await session.bash("refuse me", False, lambda _: None)
        real = await session.bash("echo real", False, lambda _: None)
    finally:
        await session.shutdown()
    assert replaced["output"] == "replaced\n" and real["output"] == "real\n"
    errors = [e for e in seen if e["type"] == "extension_error"]
    assert [(e["event"], e["error"]) for e in errors] == [("user_bash", "not this one")]
    commands = [m["command"] for m in session.get_messages() if m["role"] == "bashExecution"]
    assert commands == ["replace me", "echo real"]


async def test_settings_overrides_apply_and_are_not_written(fake_llm: FakeLLMServer, tmp_path: Path) -> None:
    agent_dir = agent_dir_for(tmp_path, fake_llm, "fake", "m1")
    session = await create_agent_session(cwd=workdir(tmp_path), agent_dir=agent_dir, provider="fake", model="m1",
                                         in_memory=True, settings={"steeringMode": "all"}, tools=[])
    try:
        state = session.get_state()
        active = [t.name for t in session.agent.tools]
    finally:
        await session.shutdown()
    assert state["steeringMode"] == "all" and state["followUpMode"] == "one-at-a-time"
    assert active == []
    assert not (agent_dir / "settings.json").exists()


async def test_two_sessions_run_concurrently_in_isolation(tmp_path: Path) -> None:
    """Different cwds, agent dirs, models and tools; each sees only its own."""
    with FakeLLMServer() as alpha_llm, FakeLLMServer() as beta_llm:
        alpha_llm.add({"content": [{"type": "text", "text": "alpha says hi"}], "chunkDelayMs": 5})
        beta_llm.add({"content": [{"type": "text", "text": "beta says hi"}], "chunkDelayMs": 5})
        alpha_root, beta_root = tmp_path / "a", tmp_path / "b"
        alpha = await create_agent_session(
            cwd=workdir(alpha_root), agent_dir=agent_dir_for(alpha_root, alpha_llm, "alpha", "model-a"),
            provider="alpha", model="model-a", custom_tools=[FunctionTool("only_alpha", "A", lambda p: "a")])
        beta = await create_agent_session(
            cwd=workdir(beta_root), agent_dir=agent_dir_for(beta_root, beta_llm, "beta", "model-b"),
            provider="beta", model="model-b", thinking_level="off", settings={"followUpMode": "all"})
        try:
            alpha_events, beta_events = await asyncio.gather(run_prompt(alpha, "one"), run_prompt(beta, "two"))
            alpha_file, beta_file = alpha.sm.session_file, beta.sm.session_file
            states = alpha.get_state(), beta.get_state()
        finally:
            await asyncio.gather(alpha.shutdown(), beta.shutdown())
    assert alpha.get_last_assistant_text() == "alpha says hi" and beta.get_last_assistant_text() == "beta says hi"
    assert [r["body"]["model"] for r in alpha_llm.requests] == ["model-a"]
    assert [r["body"]["model"] for r in beta_llm.requests] == ["model-b"]
    alpha_tools = {t["function"]["name"] for t in alpha_llm.requests[0]["body"]["tools"]}
    beta_tools = {t["function"]["name"] for t in beta_llm.requests[0]["body"]["tools"]}
    assert "only_alpha" in alpha_tools and "only_alpha" not in beta_tools
    assert str(alpha_root / "work") in alpha_llm.requests[0]["body"]["messages"][0]["content"]
    assert str(beta_root / "work") not in alpha_llm.requests[0]["body"]["messages"][0]["content"]
    assert states[0]["followUpMode"] == "one-at-a-time" and states[1]["followUpMode"] == "all"
    assert alpha_file is not None and beta_file is not None
    assert alpha_file.is_relative_to(alpha_root / "agent") and beta_file.is_relative_to(beta_root / "agent")
    assert {e["type"] for e in alpha_events} == {e["type"] for e in beta_events}


async def test_events_iterator_stops_when_closed(fake_llm: FakeLLMServer, tmp_path: Path) -> None:
    session = await create_agent_session(cwd=workdir(tmp_path), agent_dir=agent_dir_for(tmp_path, fake_llm, "fake", "m1"),
                                         provider="fake", model="m1", in_memory=True)
    try:
        async with session.events() as stream:
            await session.set_session_name("named")
        await session.set_session_name("after close")
        received = [event async for event in stream]
    finally:
        await session.shutdown()
    assert received == [{"type": "session_info_changed", "name": "named"}]
    with pytest.raises(StopAsyncIteration):
        await stream.__anext__()


def test_function_tool_result_is_a_tool_result() -> None:
    tool = FunctionTool("t", "d", lambda params: ToolResult(content=[{"type": "text", "text": "x"}], is_error=True))
    result = asyncio.run(tool.execute("id", {}, None, lambda _: None))  # type: ignore[arg-type]
    assert result.is_error and result.content == [{"type": "text", "text": "x"}]


@pytest.mark.slow
async def test_shutting_one_session_down_leaves_the_others_commands_running(
        fake_llm: FakeLLMServer, tmp_path: Path) -> None:
    """Each session kills only the process groups it started and removes only its own full-output files:
    a host closing one session must not take a command or file another session still uses with it."""
    sessions = [await create_agent_session(cwd=workdir(tmp_path / name), agent_dir=agent_dir_for(
        tmp_path / name, fake_llm, "fake", "m1"), provider="fake", model="m1", in_memory=True) for name in "ab"]
    alpha, beta = sessions
    started = tmp_path / "started"
    try:
        spilled = Path((await beta.bash("seq 1 30000", False, lambda _: None))["fullOutputPath"])
        running = asyncio.ensure_future(beta.bash(f"echo $$ > {started}; sleep 1; echo finished", False, lambda _: None))
        while not started.exists() or not started.read_text().strip():
            await asyncio.sleep(0.02)
        await alpha.shutdown()
        result = await running
        assert spilled.exists()
    finally:
        await beta.shutdown()
    assert result["exitCode"] == 0 and result["output"] == "finished\n"
    assert not result["cancelled"]
    assert not spilled.exists()  # beta's own shutdown removes it
