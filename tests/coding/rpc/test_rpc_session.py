"""``pi --mode rpc`` end to end: the real process, a real session, the scripted fake LLM server over HTTP.

Event orders and shapes are pi 1.6.0's.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.fakes.llm_server import FakeLLMServer
from tests.support.rpc_helpers import PYTHON, RpcProcess

MODEL_ID = "fake-model"


@pytest.fixture
def workspace(tmp_path: Path, fake_llm: FakeLLMServer) -> Iterator[tuple[Path, dict[str, str]]]:
    """A cwd and an environment whose agent dir routes provider ``fake`` to the fake server."""
    agent_dir = tmp_path / "agent"
    agent_dir.mkdir()
    (agent_dir / "models.json").write_text(json.dumps({"providers": {"fake": {
        "baseUrl": f"{fake_llm.url}/v1", "api": "openai-completions", "apiKey": "dummy",
        "models": [{"id": MODEL_ID, "contextWindow": 100000, "maxTokens": 4096}]}}}))
    cwd = tmp_path / "work"
    cwd.mkdir()
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(agent_dir), "HOME": str(tmp_path)}
    yield cwd, env


@pytest.fixture
async def pi(workspace: tuple[Path, dict[str, str]]) -> AsyncIterator[RpcProcess]:
    cwd, env = workspace
    proc = await RpcProcess.pi("--provider", "fake", "--model", MODEL_ID, "--no-session", cwd=cwd, env=env)
    yield proc
    await proc.kill()


def _types(records: list[dict[str, Any]]) -> list[str]:
    return [r["type"] for r in records if r["type"] != "message_update"]


def _roles(records: list[dict[str, Any]], kind: str) -> list[str]:
    return [r["message"]["role"] for r in records if r["type"] == kind]


async def _run(pi: RpcProcess, message: str, **extra: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Send a prompt; return its response and every record through ``agent_settled``."""
    await pi.send({"type": "prompt", "message": message, "id": "run", **extra})
    records = await pi.read_until(lambda r: r["type"] == "agent_settled")
    response = next(r for r in records if r.get("id") == "run")
    return response, records


# --------------------------------------------------------------------------- state and shapes


@pytest.mark.slow
async def test_get_state_shape(pi: RpcProcess) -> None:
    state = (await pi.request({"type": "get_state"}))["data"]
    assert state["model"]["provider"] == "fake" and state["model"]["id"] == MODEL_ID
    assert state["isStreaming"] is False and state["isCompacting"] is False
    assert state["steeringMode"] == state["followUpMode"] == "one-at-a-time"
    assert "sessionFile" not in state and "sessionName" not in state  # --no-session, no name
    assert state["pendingMessageCount"] == 0


async def test_prompt_without_a_model_names_how_to_configure_one(workspace: tuple[Path, dict[str, str]]) -> None:
    cwd, env = workspace
    Path(env["PI_CODING_AGENT_DIR"], "models.json").unlink()
    proc = await RpcProcess.pi("--no-session", cwd=cwd, env=env)
    try:
        state = (await proc.request({"type": "get_state"}))["data"]
        assert state["model"]["id"] == "unknown"
        response = await proc.request({"type": "prompt", "message": "hi"})
        assert response["success"] is False
        assert response["error"].startswith("No API key found for the selected model.")
        assert "pi auth login" in response["error"] and "/login" not in response["error"]
    finally:
        await proc.kill()


# --------------------------------------------------------------------------- event sequences


@pytest.mark.slow
async def test_plain_text_reply_sequence(pi: RpcProcess, fake_llm: FakeLLMServer) -> None:
    fake_llm.add({"content": [{"type": "text", "text": "Hello there, friend"}]})
    response, records = await _run(pi, "hi")
    assert response["data"] == {"disposition": "started"}
    types = _types(records)
    assert types[0] == "response" and types[1] == "agent_start"  # response before agent_start
    assert types[-3:] == ["turn_end", "agent_end", "agent_settled"]
    assert [r for r in _roles(records, "message_end") if r != "system"] == ["user", "assistant"]
    updates = [r for r in records if r["type"] == "message_update"]
    assert updates and all(set(u) == {"type", "usage", "assistantMessageEvent"} for u in updates)
    assert "".join(u["assistantMessageEvent"].get("delta", "") for u in updates
                   if u["assistantMessageEvent"]["type"] == "text_delta") == "Hello there, friend"
    assert records[-1] == {"type": "agent_settled", "aborted": False}
    text = await pi.request({"type": "get_last_assistant_text"})
    assert text["data"] == {"text": "Hello there, friend"}


@pytest.mark.slow
async def test_tool_calls_then_answer(pi: RpcProcess, fake_llm: FakeLLMServer,
                                      workspace: tuple[Path, dict[str, str]]) -> None:
    (workspace[0] / "notes.txt").write_text("remember the milk\n")
    fake_llm.add(
        {"content": [{"type": "toolCall", "id": "call_a", "name": "bash", "arguments": {"command": "echo from-tool"}},
                     {"type": "toolCall", "id": "call_b", "name": "read", "arguments": {"path": "notes.txt"}}]},
        {"content": [{"type": "text", "text": "done"}]},
    )
    _, records = await _run(pi, "use tools")
    starts = [r["toolCallId"] for r in records if r["type"] == "tool_execution_start"]
    ends = {r["toolCallId"]: r for r in records if r["type"] == "tool_execution_end"}
    assert starts == ["call_a", "call_b"] and set(ends) == {"call_a", "call_b"}
    assert not ends["call_a"]["isError"] and not ends["call_b"]["isError"]
    results = [r["message"] for r in records if r["type"] == "message_end" and r["message"]["role"] == "toolResult"]
    assert [m["toolCallId"] for m in results] == ["call_a", "call_b"]
    assert "from-tool" in results[0]["content"][0]["text"]
    assert "remember the milk" in results[1]["content"][0]["text"]
    assert _types(records).count("turn_start") == 2
    assert b"from-tool" not in b"\n".join(line for line in pi.raw_lines if not line.startswith(b"{"))


@pytest.mark.slow
async def test_abort_while_streaming(pi: RpcProcess, fake_llm: FakeLLMServer) -> None:
    fake_llm.add({"content": [{"type": "text", "text": "x" * 4000}], "chunkSize": 4, "chunkDelayMs": 20})
    await pi.send({"type": "prompt", "message": "long", "id": "p"})
    await pi.read_until(lambda r: r["type"] == "message_update")
    await pi.send({"type": "abort", "id": "a"})
    response, records = await pi.response_to("a")
    assert records[-1] == {"type": "agent_settled", "aborted": True}
    final = next(r["message"] for r in reversed(records) if r["type"] == "message_end")
    assert final["stopReason"] == "aborted"
    assert "data" not in response and response["success"] is True


@pytest.mark.slow
async def test_two_get_state_during_a_prompt(pi: RpcProcess, fake_llm: FakeLLMServer) -> None:
    fake_llm.add({"content": [{"type": "text", "text": "y" * 2000}], "chunkSize": 4, "chunkDelayMs": 20})
    await pi.send({"type": "prompt", "message": "long", "id": "p"})
    await pi.read_until(lambda r: r["type"] == "message_update")
    await pi.send({"type": "get_state", "id": "s1"})
    await pi.send({"type": "get_state", "id": "s2"})
    first, before = await pi.response_to("s1")
    second, _ = await pi.response_to("s2")
    assert first["data"]["isStreaming"] and second["data"]["isStreaming"]
    assert "agent_settled" not in _types(before)
    await pi.request({"type": "abort"})


@pytest.mark.slow
async def test_steer_and_follow_up_respond_after_queue_update(pi: RpcProcess) -> None:
    await pi.send({"type": "steer", "message": "later please", "id": "st"})
    response, before = await pi.response_to("st")
    assert response["data"] == {"disposition": "queued"}
    assert before[-1] == {"type": "queue_update", "steering": ["later please"], "followUp": []}
    cleared = await pi.request({"type": "clear_queue"})
    assert cleared["data"] == {"steering": ["later please"], "followUp": []}


# --------------------------------------------------------------------------- bash and the stdout guard


@pytest.mark.slow
async def test_bash_command_streams_with_its_id(pi: RpcProcess) -> None:
    await pi.send({"type": "bash", "command": "echo hi", "id": "b"})
    response, before = await pi.response_to("b")
    assert response["data"]["output"] == "hi\n" and response["data"]["exitCode"] == 0
    assert response["data"]["cancelled"] is False and response["data"]["truncated"] is False
    assert [r for r in before if r["type"] == "bash_execution_update"] == [
        {"type": "bash_execution_update", "id": "b", "delta": "hi\n"}]
    assert b"hi" not in pi.raw_lines  # the child's output only ever arrives inside records


@pytest.mark.slow
async def test_abort_bash_overtakes_a_running_bash(pi: RpcProcess) -> None:
    await pi.send({"type": "bash", "command": "echo go; sleep 60", "id": "long"})
    await pi.read_until(lambda r: r["type"] == "bash_execution_update")
    assert (await pi.request({"type": "abort_bash"}))["success"] is True
    response, _ = await pi.response_to("long")
    assert response["data"]["cancelled"] is True and "exitCode" not in response["data"]


# --------------------------------------------------------------------------- every command answers


COMMAND_SWEEP: list[tuple[dict[str, Any], bool]] = [
    ({"type": "get_messages"}, True),
    ({"type": "get_available_models"}, True),
    ({"type": "cycle_model"}, True),
    ({"type": "set_thinking_level", "level": "high"}, False),
    ({"type": "cycle_thinking_level"}, True),
    ({"type": "get_available_thinking_levels"}, True),
    ({"type": "set_steering_mode", "mode": "all"}, False),
    ({"type": "set_follow_up_mode", "mode": "all"}, False),
    ({"type": "set_auto_compaction", "enabled": False}, False),
    ({"type": "set_auto_retry", "enabled": False}, False),
    ({"type": "abort_retry"}, False),
    ({"type": "abort_bash"}, False),
    ({"type": "abort"}, False),
    ({"type": "get_session_stats"}, True),
    ({"type": "get_fork_messages"}, True),
    ({"type": "get_entries"}, True),
    ({"type": "get_tree"}, True),
    ({"type": "get_last_assistant_text"}, True),
    ({"type": "get_commands"}, True),
    ({"type": "new_session"}, True),
    ({"type": "set_session_name", "name": " demo \n"}, False),
]


@pytest.mark.parametrize(("command", "has_data"), COMMAND_SWEEP, ids=[c["type"] for c, _ in COMMAND_SWEEP])
@pytest.mark.slow
async def test_every_command_answers_with_its_shape(pi: RpcProcess, command: dict[str, Any], has_data: bool) -> None:
    response = await pi.request(command)
    assert response["success"] is True, response
    assert response["command"] == command["type"]
    assert ("data" in response) is has_data


@pytest.mark.slow
async def test_documented_errors(pi: RpcProcess) -> None:
    assert (await pi.request({"type": "set_model", "provider": "nope", "modelId": "x"}))["error"] == \
        "Model not found: nope/x"
    assert (await pi.request({"type": "get_entries", "since": "missing"}))["error"] == "Entry not found: missing"
    assert (await pi.request({"type": "export_html"}))["error"] == "Cannot export in-memory session to HTML"
    assert (await pi.request({"type": "compact"}))["success"] is False
    assert (await pi.request({"type": "set_session_name", "name": " "}))["error"] == "Session name cannot be empty"


@pytest.mark.slow
async def test_session_name_event_precedes_the_response(pi: RpcProcess) -> None:
    await pi.send({"type": "set_session_name", "name": "a\nb", "id": "n"})
    response, before = await pi.response_to("n")
    assert before[-1]["type"] == "session_info_changed"
    assert (await pi.request({"type": "get_state"}))["data"]["sessionName"] == before[-1]["name"]
    assert response["success"] is True


# --------------------------------------------------------------------------- shutdown


@pytest.mark.slow
async def test_eof_during_bash_leaves_no_child_behind(pi: RpcProcess) -> None:
    await pi.send({"type": "bash", "command": "echo $$; exec sleep 60", "id": "c"})
    update = (await pi.read_until(lambda r: r["type"] == "bash_execution_update"))[-1]
    pid = int(update["delta"].strip())
    await pi.close_stdin()
    await pi.read_rest()
    assert await pi.wait() == 0
    from tests.coding.rpc.test_rpc_transport import _wait_gone
    assert await _wait_gone(pid)


@pytest.mark.slow
async def test_sigterm_exits_143(pi: RpcProcess) -> None:
    await pi.request({"type": "get_state"})
    pi.proc.terminate()
    assert await pi.wait() == 143


# --------------------------------------------------------------------------- print and JSON modes


async def _one_shot(workspace: tuple[Path, dict[str, str]], *args: str, stdin: bytes = b"") -> tuple[int, bytes, str]:
    import asyncio

    cwd, env = workspace
    proc = await asyncio.create_subprocess_exec(
        PYTHON, "-m", "pi_coding_agent", "--provider", "fake", "--model", MODEL_ID, "--no-session", *args,
        cwd=cwd, env=env, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(stdin), 60)
    return proc.returncode or 0, out, err.decode()


@pytest.mark.slow
async def test_print_mode_prints_the_final_text(workspace: tuple[Path, dict[str, str]], fake_llm: FakeLLMServer) -> None:
    fake_llm.add({"content": [{"type": "text", "text": "the answer"}]})
    code, out, _ = await _one_shot(workspace, "-p", "question", stdin=b"context: ")
    assert (code, out) == (0, b"the answer\n")
    last_user = fake_llm.requests[-1]["body"]["messages"][-1]
    assert "context:question" in json.dumps(last_user)  # stdin prepended like pi (trimmed, no separator)


@pytest.mark.slow
async def test_print_mode_fails_on_an_error_reply(workspace: tuple[Path, dict[str, str]],
                                                  fake_llm: FakeLLMServer) -> None:
    fake_llm.add(*[{"status": 400, "body": {"error": {"message": "bad request"}}}] * 4)
    code, out, err = await _one_shot(workspace, "-p", "question")
    assert code == 1 and out == b"" and "400" in err


@pytest.mark.slow
async def test_json_mode_prints_header_then_events(workspace: tuple[Path, dict[str, str]],
                                                   fake_llm: FakeLLMServer) -> None:
    fake_llm.add({"content": [{"type": "text", "text": "json reply"}]})
    code, out, _ = await _one_shot(workspace, "--mode", "json", "question")
    records = [json.loads(line) for line in out.splitlines()]
    assert code == 0
    assert records[0]["type"] == "session" and records[0]["version"] == 3
    assert records[1]["type"] == "agent_start" and records[-1]["type"] == "agent_settled"
