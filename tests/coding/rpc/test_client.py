"""The RPC client against the real transport (around FakeSession, see tests/support/rpc_helpers.py)."""

from __future__ import annotations

import ast
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from pi_coding_agent.client import RpcClient, RpcError
from tests.support.rpc_helpers import PYTHON, ROOT

CLIENT_DIR = ROOT / "src" / "pi_coding_agent" / "client"


@pytest.fixture
async def client() -> AsyncIterator[RpcClient]:
    rpc = await RpcClient.start([], cwd=ROOT, command=[PYTHON, "-m", "tests.support.rpc_helpers"])
    yield rpc
    await rpc.stop()


async def test_prompt_and_wait_returns_the_whole_run(client: RpcClient) -> None:
    events = await client.prompt_and_wait("hello")
    types = [e["type"] for e in events]
    assert types[0] == "agent_start" and types[-1] == "agent_settled"
    assert await client.get_last_assistant_text() == "echo: hello"


@pytest.mark.slow
async def test_prompt_and_wait_does_not_wait_for_handled_prompts(client: RpcClient) -> None:
    client.on_ui_request(lambda request: {"value": "A"} if request["method"] == "select" else {"confirmed": True})
    seen: list[dict[str, Any]] = []
    client.subscribe(seen.append)
    events = await client.prompt_and_wait("/ask")
    assert [e["method"] for e in events] == ["select", "confirm", "notify"]
    assert events[-1]["message"] == "A:True"
    assert seen == events


@pytest.mark.slow
async def test_dialogs_are_cancelled_without_a_handler(client: RpcClient) -> None:
    events = await client.prompt_and_wait("/ask")
    assert events[-1]["message"] == "None:False"


@pytest.mark.slow
async def test_abort_and_wait_for_idle(client: RpcClient) -> None:
    assert (await client.prompt("slow"))["disposition"] == "started"
    assert (await client.get_state())["isStreaming"] is True
    with pytest.raises(RpcError, match="already processing"):
        await client.prompt("again")
    assert (await client.prompt("again", streaming_behavior="followUp"))["disposition"] == "queued"
    await client.abort()
    await client.wait_for_idle()
    assert (await client.get_state())["isStreaming"] is False


@pytest.mark.slow
async def test_bash_streams_output_to_the_callback(client: RpcClient) -> None:
    chunks: list[str] = []
    result = await client.bash("echo one; echo two", on_output=chunks.append)
    assert "".join(chunks) == result["output"] == "one\ntwo\n"
    assert result["exitCode"] == 0


@pytest.mark.slow
async def test_typed_methods_unwrap_and_raise(client: RpcClient) -> None:
    assert await client.get_messages() == []
    assert await client.get_available_models() == [{"provider": "faux", "id": "faux-1"}]
    assert await client.get_available_thinking_levels() == ["off"]
    assert await client.cycle_model() is None
    assert await client.fork("cancel-me") == {"cancelled": True}
    await client.set_session_name("named")
    assert (await client.get_state())["sessionName"] == "named"
    with pytest.raises(RpcError) as caught:
        await client.set_model("nope", "x")
    assert str(caught.value) == "Model not found: nope/x" and caught.value.command == "set_model"


@pytest.mark.slow
async def test_stop_closes_stdin_and_reports_the_exit_code(client: RpcClient) -> None:
    assert await client.stop() == 0
    with pytest.raises(RpcError, match="not running"):
        await client.get_state()


async def test_a_dead_process_fails_pending_waits() -> None:
    client = await RpcClient.start([], cwd=ROOT, command=[PYTHON, "-c", "import sys; sys.stdin.readline()"])
    with pytest.raises(RpcError, match="not running"):
        await client.prompt_and_wait("hello")
    await client.stop()


def test_client_has_one_method_per_command() -> None:
    from pi_coding_agent.coding.modes.rpc.commands import COMMANDS

    assert all(callable(getattr(RpcClient, name, None)) for name in COMMANDS)


def test_client_imports_nothing_else_from_the_package() -> None:
    for path in Path(CLIENT_DIR).glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("pi_coding_agent"):
                assert node.module.startswith("pi_coding_agent.client"), f"{path.name} imports {node.module}"
