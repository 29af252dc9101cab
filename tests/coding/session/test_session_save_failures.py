"""A session file that cannot be written: read-only, deleted, a full disk (issue 33, items 5, 6, 10).

The real ``pi --mode rpc`` process, the fake LLM server, and the session directory on a real tmpfs
mount (remounted read-only, or filled up), so the kernel gives the errors a user meets. Mounting
needs root (the CI runs the suite as root); elsewhere these tests skip.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.conftest import Remount
from tests.support.cli_sides import FAKE_MODEL, fake_agent_env, needs_reference, pi_command
from tests.support.fakes.llm_server import FakeLLMServer
from tests.support.rpc_helpers import RpcProcess

MODEL_ID = "fake-model"
SIDES = ["ours", pytest.param("reference", marks=needs_reference)]


@pytest.fixture
async def pi(tmp_path: Path, fake_llm: FakeLLMServer, tmpfs: tuple[Path, Remount]) -> AsyncIterator[RpcProcess]:
    """``pi --mode rpc`` whose sessions go to the tmpfs."""
    agent_dir = tmp_path / "agent"
    agent_dir.mkdir()
    (agent_dir / "models.json").write_text(json.dumps({"providers": {"fake": {
        "baseUrl": f"{fake_llm.url}/v1", "api": "openai-completions", "apiKey": "dummy",
        "models": [{"id": MODEL_ID, "contextWindow": 100000, "maxTokens": 4096}]}}}))
    (agent_dir / "settings.json").write_text(json.dumps({"compaction": {"keepRecentTokens": 100}}))
    cwd = tmp_path / "work"
    cwd.mkdir()
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(agent_dir), "HOME": str(tmp_path)}
    proc = await RpcProcess.pi("--provider", "fake", "--model", MODEL_ID, "--session-dir", str(tmpfs[0] / "sessions"),
                               cwd=cwd, env=env)
    yield proc
    await proc.kill()


async def _prompt(pi: RpcProcess, text: str) -> list[dict[str, Any]]:
    """Every record of one prompt, through ``agent_settled`` and the notifies queued behind it."""
    await pi.send({"type": "prompt", "message": text, "id": text})
    return await pi.read_until(lambda r: r["type"] == "agent_settled") + await _drain(pi)


async def _drain(pi: RpcProcess) -> list[dict[str, Any]]:
    """The records sent before the answer to a ``get_state`` sent now."""
    command_id = pi.new_id()
    await pi.send({"type": "get_state", "id": command_id})
    return (await pi.response_to(command_id))[1]


def _notifies(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in records if r["type"] == "extension_ui_request" and r["method"] == "notify"]


def _replies(records: list[dict[str, Any]]) -> list[str]:
    return [block["text"] for r in records if r["type"] == "message_end" and r["message"]["role"] == "assistant"
            for block in r["message"]["content"] if block["type"] == "text"]


async def _session_file(pi: RpcProcess) -> Path:
    return Path((await pi.request({"type": "get_state"}))["data"]["sessionFile"])


def _file_records(path: Path) -> list[dict[str, Any]]:
    """Every line of the file, each of which must be complete JSON."""
    data = path.read_bytes()
    assert data.endswith(b"\n"), "the file ends in a partial line"
    return [orjson.loads(line) for line in data.splitlines()]


def _user_texts(records: list[dict[str, Any]]) -> list[str]:
    return [r["message"]["content"][0]["text"] for r in records
            if r["type"] == "message" and r["message"]["role"] == "user"]


async def _entries(pi: RpcProcess) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = (await pi.request({"type": "get_entries"}))["data"]["entries"]
    return entries


@pytest.mark.slow
async def test_a_read_only_session_keeps_answering_and_is_saved_whole_later(
        pi: RpcProcess, fake_llm: FakeLLMServer, tmpfs: tuple[Path, Remount]) -> None:
    fake_llm.add(*({"content": [{"type": "text", "text": f"reply {n}"}]} for n in range(1, 4)))
    await _prompt(pi, "first")
    path = await _session_file(pi)
    tmpfs[1]("ro")
    records = await _prompt(pi, "while read-only")
    assert _replies(records) == ["reply 2"]  # the model was asked and its reply reached the client
    [notify] = _notifies(records)
    assert notify["notifyType"] == "error" and str(path) in notify["message"] and "EROFS" in notify["message"]
    assert "while read-only" not in path.read_text()
    tmpfs[1]("rw")
    records = await _prompt(pi, "writable again")
    assert [n["notifyType"] for n in _notifies(records)] == ["info"]
    on_file = _file_records(path)
    assert on_file[0]["type"] == "session"
    assert _user_texts(on_file) == ["first", "while read-only", "writable again"]
    assert on_file[1:] == await _entries(pi)
    await pi.close_stdin()
    await pi.read_rest()
    stderr = await pi.stderr_text()
    assert "Traceback" not in stderr
    [line] = [line for line in stderr.splitlines() if str(path) in line]  # one line, naming file and error
    assert "EROFS: Read-only file system" in line


async def test_a_deleted_session_file_comes_back_complete(pi: RpcProcess) -> None:
    await _prompt(pi, "first")
    path = await _session_file(pi)
    header = _file_records(path)[0]
    path.unlink()
    records = await _prompt(pi, "after the delete")
    assert _replies(records) == ["ok"] and not _notifies(records)
    on_file = _file_records(path)
    assert on_file[0] == header
    assert _user_texts(on_file) == ["first", "after the delete"]
    assert on_file[1:] == await _entries(pi)


@pytest.mark.slow
async def test_a_full_disk_during_a_reply_sends_it_and_leaves_no_torn_line(
        pi: RpcProcess, fake_llm: FakeLLMServer, tmpfs: tuple[Path, Remount]) -> None:
    await _prompt(pi, "first")
    path = await _session_file(pi)
    filler = tmpfs[0] / "filler"
    _fill(filler, leave=4096)
    long_text = "x" * 200_000
    fake_llm.add({"content": [{"type": "text", "text": long_text}], "chunkSize": 50_000})
    records = await _prompt(pi, "a long reply")
    assert _replies(records) == [long_text]  # the client has it, although the disk does not
    [notify] = _notifies(records)
    assert notify["notifyType"] == "error" and "ENOSPC" in notify["message"]
    assert _user_texts(_file_records(path)) == ["first", "a long reply"]  # complete lines only
    filler.unlink()
    records = await _prompt(pi, "space again")
    on_file = _file_records(path)
    assert _user_texts(on_file) == ["first", "a long reply", "space again"]
    assert long_text in _replies([{"type": "message_end", "message": r["message"]} for r in on_file if r["type"] == "message"])
    assert on_file[1:] == await _entries(pi)


@pytest.mark.slow
async def test_a_compaction_on_a_full_disk_is_saved_once_there_is_room(
        pi: RpcProcess, fake_llm: FakeLLMServer, tmpfs: tuple[Path, Remount]) -> None:
    for text in ("one", "two", "three"):
        await _prompt(pi, f"{text} {'words ' * 200}")
    path = await _session_file(pi)
    filler = tmpfs[0] / "filler"
    _fill(filler, leave=1024)
    fake_llm.add({"content": [{"type": "text", "text": "summary " + "s" * 100_000}]})
    await pi.send({"type": "compact", "id": "c"})
    response, records = await pi.response_to("c")
    assert response["success"] is True, response.get("error")
    assert [n["notifyType"] for n in _notifies(records + await _drain(pi))] == ["error"]
    assert "compaction" not in [r["type"] for r in _file_records(path)]  # no torn compaction line
    filler.unlink()
    await _prompt(pi, "four")
    on_file = _file_records(path)
    assert [r["type"] for r in on_file].count("compaction") == 1
    assert on_file[1:] == await _entries(pi)


def _fill(filler: Path, leave: int) -> None:
    """Fill the file system of ``filler`` until about ``leave`` bytes are free."""
    stat = os.statvfs(filler.parent)
    free = stat.f_bavail * stat.f_frsize
    with filler.open("wb") as handle:
        handle.write(b"\0" * max(0, free - leave))


@pytest.mark.parametrize("kind", SIDES)
@pytest.mark.slow
async def test_both_sides_show_a_read_only_session_to_the_client(
        tmp_path: Path, fake_llm: FakeLLMServer, tmpfs: tuple[Path, Remount], kind: str) -> None:
    """pi 1.6.0 puts EROFS in an error reply instead of the model's; ours answers and notifies."""
    env = fake_agent_env(tmp_path / "home", fake_llm.url)
    command, env = pi_command(kind, ["--mode", "rpc", *FAKE_MODEL, "--session-dir", str(tmpfs[0])], env)
    proc = await RpcProcess.spawn(command, cwd=tmp_path, env=env)
    try:
        await _prompt(proc, "first")
        tmpfs[1]("ro")
        shown = orjson.dumps(await _prompt(proc, "while read-only")).decode()
        assert "EROFS" in shown and str(tmpfs[0]) in shown
        assert (await proc.request({"type": "get_state"}))["success"] is True  # still serving
    finally:
        await proc.kill()
