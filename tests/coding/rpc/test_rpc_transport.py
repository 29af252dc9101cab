"""RPC transport over real pipes: framing, bad input, stdout protection, concurrency, shutdown.

The process under test is the real transport and command table around ``FakeSession``
(tests/support/rpc_helpers.py), so these tests do not depend on the LLM stack.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest

from pi_coding_agent.coding.errors import CommandError
from pi_coding_agent.coding.modes.rpc.commands import COMMANDS, convert_arguments
from pi_coding_agent.coding.modes.rpc.transport import LineSplitter
from tests.support.rpc_helpers import PYTHON, ROOT, RpcProcess


@pytest.fixture
async def rpc() -> AsyncIterator[RpcProcess]:
    proc = await RpcProcess.fake()
    yield proc
    await proc.kill()


# --------------------------------------------------------------------------- pure units


def test_splitter_only_splits_on_lf() -> None:
    splitter = LineSplitter()
    assert splitter.feed(b'{"a":"x\xe2\x80\xa8y"}\r\n{"b"') == [b'{"a":"x\xe2\x80\xa8y"}']
    assert splitter.feed(b":1}\n\n") == [b'{"b":1}', b""]
    assert splitter.feed(b"tail\r") == []
    assert splitter.finish() == b"tail"
    assert splitter.finish() is None


def test_splitter_handles_a_line_fed_byte_by_byte() -> None:
    splitter = LineSplitter()
    lines = [line for byte in b'{"k":"v"}\n' for line in splitter.feed(bytes([byte]))]
    assert lines == [b'{"k":"v"}']


def test_camel_case_fields_become_snake_case_arguments() -> None:
    record = {"type": "bash", "command": "ls", "excludeFromContext": True}
    assert convert_arguments("bash", COMMANDS["bash"], record) == {"command": "ls", "exclude_from_context": True}
    assert convert_arguments("bash", COMMANDS["bash"], {"command": "ls"})["exclude_from_context"] is False
    prompt = {"message": "m", "streamingBehavior": "followUp", "images": None}
    assert convert_arguments("prompt", COMMANDS["prompt"], prompt) == {
        "message": "m", "images": None, "streaming_behavior": "followUp"}


@pytest.mark.parametrize(
    ("name", "record", "error"),
    [
        ("prompt", {}, 'prompt: "message" is required'),
        ("prompt", {"message": 3}, 'prompt: "message" must be a string'),
        ("prompt", {"message": "m", "streamingBehavior": "later"},
         'prompt: "streamingBehavior" must be one of "steer", "followUp"'),
        ("prompt", {"message": "m", "images": [{"type": "image"}]}, 'prompt: "images" [0] must be'),
        ("set_auto_retry", {"enabled": "yes"}, 'set_auto_retry: "enabled" must be a boolean'),
        ("set_model", {"provider": "p"}, 'set_model: "modelId" is required'),
    ],
)
def test_invalid_fields_name_the_field(name: str, record: dict, error: str) -> None:
    with pytest.raises(CommandError) as caught:
        convert_arguments(name, COMMANDS[name], record)
    assert str(caught.value).startswith(error)


def test_the_table_has_all_33_commands() -> None:
    assert len(COMMANDS) == 33


# --------------------------------------------------------------------------- framing


@pytest.mark.slow
async def test_crlf_and_unicode_line_separators(rpc: RpcProcess) -> None:
    await rpc.write(b'{"type":"set_session_name","name":"a\xe2\x80\xa8b\xe2\x80\xa9c","id":"n"}\r\n')
    response, events = await rpc.response_to("n")
    assert response == {"id": "n", "type": "response", "command": "set_session_name", "success": True}
    assert events == [{"type": "session_info_changed", "name": "a\u2028b\u2029c"}]


@pytest.mark.slow
async def test_split_writes_make_one_command(rpc: RpcProcess) -> None:
    for piece in (b'{"type":"get_st', b'ate","i', b'd":"s1"', b"}\n"):
        await rpc.write(piece)
    response, _ = await rpc.response_to("s1")
    assert response["success"] is True


@pytest.mark.slow
async def test_a_20_mb_line_is_one_command(rpc: RpcProcess) -> None:
    name = "x" * (20 * 1024 * 1024)
    await rpc.send({"type": "set_session_name", "name": name, "id": "big"})
    response, events = await rpc.response_to("big")
    assert response["success"] is True
    assert events[0]["name"] == name


@pytest.mark.slow
async def test_data_after_the_last_lf_is_processed_at_eof(rpc: RpcProcess) -> None:
    await rpc.write(b'{"type":"get_state","id":"last"}')
    await rpc.close_stdin()
    records = await rpc.read_rest()
    assert [r.get("id") for r in records] == ["last"]
    assert await rpc.wait() == 0


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (b"not json", {"type": "response", "command": "parse", "success": False}),
        (b"", {"type": "response", "command": "parse", "success": False}),
        (b"null", {"type": "response", "success": False, "error": "Unknown command: undefined"}),
        (b"42", {"type": "response", "success": False, "error": "Unknown command: undefined"}),
        (b"[1,2]", {"type": "response", "success": False, "error": "Unknown command: undefined"}),
        (b"{}", {"type": "response", "success": False, "error": "Unknown command: undefined"}),
        (b'{"id":"u","type":"nope"}',
         {"id": "u", "type": "response", "command": "nope", "success": False, "error": "Unknown command: nope"}),
        (b'{"id":"v","type":"prompt"}',
         {"id": "v", "type": "response", "command": "prompt", "success": False,
          "error": 'prompt: "message" is required'}),
        (b'{"type":"set_model","provider":"faux","modelId":7}',
         {"type": "response", "command": "set_model", "success": False,
          "error": 'set_model: "modelId" must be a string'}),
    ],
)
@pytest.mark.slow
async def test_bad_input_gets_an_error_and_the_process_keeps_serving(
    rpc: RpcProcess, line: bytes, expected: dict
) -> None:
    await rpc.write(line + b"\n")
    record = await rpc.read_record()
    if expected.get("command") == "parse":
        assert record["error"].startswith("Failed to parse command: ")
        record.pop("error")
    assert record == expected
    assert (await rpc.request({"type": "get_state"}))["success"] is True


async def test_session_errors_become_error_responses(rpc: RpcProcess) -> None:
    response = await rpc.request({"type": "set_model", "provider": "x", "modelId": "y"})
    assert response["error"] == "Model not found: x/y"
    response = await rpc.request({"type": "set_session_name", "name": "  \n "})
    assert response["error"] == "Session name cannot be empty"


async def test_response_shapes_of_the_special_cases(rpc: RpcProcess) -> None:
    assert (await rpc.request({"type": "fork", "entryId": "cancel-me"}))["data"] == {"cancelled": True}
    assert (await rpc.request({"type": "fork", "entryId": "e1"}))["data"] == {"text": "forked text", "cancelled": False}
    assert (await rpc.request({"type": "get_last_assistant_text"}))["data"] == {}
    assert (await rpc.request({"type": "cycle_model"}))["data"] is None
    assert "data" not in await rpc.request({"type": "abort"})
    assert (await rpc.request({"type": "get_messages"}))["data"] == {"messages": []}
    assert (await rpc.request({"type": "get_tree"}))["data"] == {"tree": [], "leafId": None}  # streamed
    assert (await rpc.request({"type": "get_entries"}))["data"] == {"entries": [], "leafId": None}


async def test_id_is_echoed_whatever_its_type_and_omitted_when_absent(rpc: RpcProcess) -> None:
    await rpc.send({"type": "get_state", "id": 5})
    assert (await rpc.read_record())["id"] == 5
    await rpc.send({"type": "get_state"})
    assert "id" not in await rpc.read_record()


# --------------------------------------------------------------------------- stdout protection


async def test_stray_prints_and_child_output_never_reach_protocol_stdout(rpc: RpcProcess) -> None:
    response = await rpc.request({"type": "prompt", "message": "/stray"})
    assert response["data"] == {"disposition": "handled"}
    bash = await rpc.request({"type": "bash", "command": "echo hi"})
    assert bash["data"]["output"] == "hi\n"
    await rpc.close_stdin()
    await rpc.read_rest()
    assert all(orjson.loads(line) for line in rpc.raw_lines)  # every stdout line is a JSON record
    stderr = await rpc.stderr_text()
    assert "STRAY-PRINT" in stderr and "STRAY-CHILD" in stderr


# --------------------------------------------------------------------------- concurrency and ordering


async def test_bash_updates_carry_the_id_and_precede_the_response(rpc: RpcProcess) -> None:
    await rpc.send({"type": "bash", "command": "printf 'a\\n'; sleep 0.05; printf 'b\\n'", "id": "b1"})
    response, events = await rpc.response_to("b1")
    updates = [e for e in events if e["type"] == "bash_execution_update"]
    assert "".join(u["delta"] for u in updates) == "a\nb\n"
    assert all(list(u) == ["type", "id", "delta"] and u["id"] == "b1" for u in updates)
    assert response["data"] == {"output": "a\nb\n", "cancelled": False, "truncated": False, "exitCode": 0}


async def test_commands_are_served_while_a_prompt_streams(rpc: RpcProcess) -> None:
    await rpc.send({"type": "prompt", "message": "slow", "id": "p"})
    assert (await rpc.response_to("p"))[0]["data"] == {"disposition": "started"}
    await rpc.send({"type": "get_state", "id": "s1"})
    await rpc.send({"type": "get_state", "id": "s2"})
    first, before_first = await rpc.response_to("s1")
    second, _ = await rpc.response_to("s2")
    assert first["data"]["isStreaming"] and second["data"]["isStreaming"]
    assert all(e["type"] != "agent_settled" for e in before_first)
    busy = await rpc.request({"type": "prompt", "message": "again"})
    assert busy["error"].startswith("Agent is already processing.")
    await rpc.send({"type": "abort", "id": "a"})
    response, events = await rpc.response_to("a")
    assert events[-1] == {"type": "agent_settled", "aborted": True}  # abort answers after settling
    assert "data" not in response


async def test_abort_bash_overtakes_a_running_bash(rpc: RpcProcess) -> None:
    await rpc.send({"type": "bash", "command": "echo started; sleep 60", "id": "long"})
    await rpc.read_until(lambda r: r.get("type") == "bash_execution_update")
    assert (await rpc.request({"type": "abort_bash"}))["success"] is True
    response, _ = await rpc.response_to("long")
    assert response["data"]["cancelled"] is True and "exitCode" not in response["data"]


# --------------------------------------------------------------------------- extension UI


async def test_ui_dialogs_round_trip_and_unknown_answers_are_ignored(rpc: RpcProcess) -> None:
    await rpc.send({"type": "extension_ui_response", "id": "nobody", "value": "x"})  # no response for this
    await rpc.send({"type": "prompt", "message": "/ask", "id": "ask"})
    select = await rpc.read_record()
    assert {k: v for k, v in select.items() if k != "id"} == {
        "type": "extension_ui_request", "method": "select", "title": "Pick one", "options": ["A", "B"],
        "timeout": 60000}
    await rpc.send({"type": "extension_ui_response", "id": select["id"], "value": "B"})
    confirm = await rpc.read_record()
    assert confirm["method"] == "confirm" and "timeout" not in confirm
    await rpc.send({"type": "extension_ui_response", "id": confirm["id"], "cancelled": True})
    notify = await rpc.read_record()
    assert notify["method"] == "notify" and notify["message"] == "B:False" and "notifyType" not in notify
    response = await rpc.read_record()
    assert response == {"id": "ask", "type": "response", "command": "prompt", "success": True,
                        "data": {"disposition": "handled"}}


# --------------------------------------------------------------------------- shutdown


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def _child_pid(rpc: RpcProcess) -> int:
    await rpc.send({"type": "bash", "command": "echo $$; exec sleep 60", "id": "child"})
    update = (await rpc.read_until(lambda r: r.get("type") == "bash_execution_update"))[-1]
    return int(update["delta"].strip())


async def _wait_gone(pid: int) -> bool:
    for _ in range(500):  # the orphan is reaped by init shortly after the kill
        if not _alive(pid):
            return True
        await asyncio.sleep(0.01)
    return False


async def test_eof_shuts_down_cleanly_and_kills_children(rpc: RpcProcess) -> None:
    pid = await _child_pid(rpc)
    await rpc.close_stdin()
    records = await rpc.read_rest()
    assert await rpc.wait() == 0
    assert records[-1]["id"] == "child" and records[-1]["data"]["cancelled"] is True
    assert await _wait_gone(pid)


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
async def test_signals_shut_down_in_order(rpc: RpcProcess, signum: int, code: int) -> None:
    pid = await _child_pid(rpc)
    rpc.proc.send_signal(signum)
    assert await rpc.wait() == code
    assert await _wait_gone(pid)


async def test_no_traceback_reaches_stdout_on_eof_during_a_run(rpc: RpcProcess) -> None:
    await rpc.send({"type": "prompt", "message": "slow", "id": "p"})
    await rpc.response_to("p")
    await rpc.close_stdin()
    records = await rpc.read_rest()
    assert await rpc.wait() == 0
    assert records[-1] == {"type": "agent_settled", "aborted": True}


@pytest.mark.slow
async def test_everything_written_before_exit_reaches_the_client(rpc: RpcProcess) -> None:
    names = [f"{i}" * 300_000 for i in range(10)]  # ~6 MB of output still buffered at EOF
    for i, name in enumerate(names):
        await rpc.send({"type": "set_session_name", "name": name, "id": f"n{i}"})
    await rpc.close_stdin()
    await asyncio.sleep(0.5)  # let the pipe fill up before reading (not an assertion on time)
    records = await rpc.read_rest()
    assert await rpc.wait() == 0
    assert [r["id"] for r in records if r["type"] == "response"] == [f"n{i}" for i in range(10)]


@pytest.mark.slow
def test_stdin_and_stdout_may_be_plain_files(tmp_path: Path) -> None:
    """``pi --mode rpc < commands.jsonl > out.jsonl`` and ``< /dev/null`` (not pollable) work too."""
    commands = tmp_path / "commands.jsonl"
    commands.write_bytes(b'{"type":"get_state","id":1}\n{"type":"bash","command":"echo x","id":2}')
    out = tmp_path / "out.jsonl"
    for source in (commands, Path(os.devnull)):
        with source.open("rb") as stdin, out.open("wb") as stdout:
            code = subprocess.run([PYTHON, "-m", "tests.support.rpc_helpers"], cwd=ROOT, stdin=stdin, stdout=stdout,
                                  timeout=60, check=False).returncode
        assert code == 0
        responses = [orjson.loads(line) for line in out.read_bytes().splitlines()]
        assert [r.get("id") for r in responses if r["type"] == "response"] == ([1, 2] if source == commands else [])
