"""``pi --mode acp`` over raw pipes: bad input gets a JSON-RPC error, a vanished client a clean shutdown.

Never a traceback on stdout, never a lost session entry.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.support.acp_client import MODEL_ID, make_workspace
from tests.support.fakes.llm_server import FakeLLMServer
from tests.support.rpc_helpers import PYTHON, RpcProcess

pytestmark = pytest.mark.timeout(120)
INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}


async def _spawn(tmp_path: Path, fake_llm: FakeLLMServer, *args: str) -> tuple[RpcProcess, Path]:
    cwd, env = make_workspace(tmp_path, fake_llm)
    argv = [PYTHON, "-m", "pi_coding_agent", "--mode", "acp", "--provider", "fake", "--model", MODEL_ID, *args]
    return await RpcProcess.spawn(argv, cwd=cwd, env={**os.environ, **env}), cwd


async def _answer(proc: RpcProcess, request_id: Any) -> dict[str, Any]:
    records = await proc.read_until(lambda r: r.get("id") == request_id and "method" not in r)
    return records[-1]


@pytest.mark.slow
async def test_malformed_and_unknown_input_gets_json_rpc_errors(tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    proc, cwd = await _spawn(tmp_path, fake_llm)
    try:
        await proc.send({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": str(cwd)}})
        assert (await _answer(proc, 1))["error"]["code"] == -32600  # before initialize
        await proc.write(b'{"jsonrpc": "2.0", "id": 2, "method": \n')
        parse = await proc.read_record()
        assert parse["id"] is None and parse["error"]["code"] == -32700
        await proc.write(b"[1, 2]\n")
        assert (await proc.read_record())["error"]["code"] == -32600
        await proc.send({"id": 3, "method": "initialize"})  # no jsonrpc member
        assert (await _answer(proc, 3))["error"]["code"] == -32600
        await proc.send(INIT)
        assert (await _answer(proc, 0))["result"]["protocolVersion"] == 1
        await proc.send({"jsonrpc": "2.0", "id": 4, "method": "session/teleport", "params": {}})
        assert (await _answer(proc, 4))["error"]["code"] == -32601
        await proc.send({"jsonrpc": "2.0", "id": 5, "method": "session/prompt",
                         "params": {"sessionId": "nope", "prompt": [{"type": "text", "text": "hi"}]}})
        assert (await _answer(proc, 5))["error"]["code"] == -32002
        await proc.send({"jsonrpc": "2.0", "id": 6, "method": "session/new", "params": {"cwd": "relative/dir"}})
        assert (await _answer(proc, 6))["error"]["code"] == -32602
        await proc.send({"jsonrpc": "2.0", "id": 7, "method": "session/load",
                         "params": {"sessionId": "../../etc/passwd", "cwd": str(cwd), "mcpServers": []}})
        assert (await _answer(proc, 7))["error"]["code"] == -32002
        await proc.send({"jsonrpc": "2.0", "id": 8, "method": "session/new", "params": {"cwd": str(cwd),
                         "mcpServers": [{"type": "sse", "name": "old", "url": "http://127.0.0.1:1", "headers": []}]}})
        assert (await _answer(proc, 8))["error"]["code"] == -32602
        await proc.send({"jsonrpc": "2.0", "id": 9, "method": "session/new", "params": {"cwd": str(cwd)}})
        session_id = (await _answer(proc, 9))["result"]["sessionId"]
        await proc.send({"jsonrpc": "2.0", "id": 10, "method": "session/prompt",
                         "params": {"sessionId": session_id, "prompt": [{"type": "audio", "data": "", "mimeType": "x"}]}})
        assert (await _answer(proc, 10))["error"]["code"] == -32602
        await proc.send({"jsonrpc": "2.0", "id": 11, "method": "session/set_config_option",
                         "params": {"sessionId": session_id, "configId": "model", "value": "fake/none"}})
        assert (await _answer(proc, 11))["error"]["code"] == -32602
        await proc.send({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "nope"}})
        await proc.close_stdin()
        rest = await proc.read_rest()
        assert all("error" not in r for r in rest)
        assert await proc.wait() == 0
        assert all(line.startswith(b"{") for line in proc.raw_lines)
        assert b"Traceback" not in b"\n".join(proc.raw_lines)
    finally:
        await proc.kill()


@pytest.mark.slow
async def test_client_disappearing_mid_prompt_shuts_down_and_keeps_every_entry(
        tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    proc, cwd = await _spawn(tmp_path, fake_llm)
    try:
        await proc.send(INIT)
        await _answer(proc, 0)
        await proc.send({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": str(cwd),
                                                                                    "mcpServers": []}})
        session_id = (await _answer(proc, 1))["result"]["sessionId"]
        fake_llm.add({"content": [{"type": "text", "text": "y" * 4000}], "chunkSize": 4, "chunkDelayMs": 20})
        await proc.send({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
                         "params": {"sessionId": session_id, "prompt": [{"type": "text", "text": "talk"}]}})
        await proc.read_until(lambda r: r.get("params", {}).get("update", {}).get("sessionUpdate")
                              == "agent_message_chunk")
        await proc.close_stdin()
        assert await proc.wait() == 0
        rest = [orjson.loads(line) for line in (await proc.proc.stdout.read()).splitlines() if line]  # type: ignore[union-attr]
        assert {"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "cancelled"}} in rest
    finally:
        await proc.kill()
    saved = next(p for p in tmp_path.rglob("*.jsonl") if session_id in p.read_text().split("\n", 1)[0])
    messages = [e["message"] for e in map(json.loads, saved.read_text().splitlines()) if e["type"] == "message"]
    assert [m["role"] for m in messages][-2:] == ["user", "assistant"]
    assert messages[-1]["stopReason"] == "aborted" and messages[-1]["content"][0]["text"].startswith("yyyy")


async def test_initialize_answers_before_any_session_exists(tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    proc, _ = await _spawn(tmp_path, fake_llm)
    try:
        await proc.send({**INIT, "params": {"protocolVersion": 7}})
        result = (await _answer(proc, 0))["result"]
        assert result["protocolVersion"] == 1  # our latest, for the client to judge
        assert result["agentCapabilities"]["promptCapabilities"] == {"image": True, "audio": False,
                                                                      "embeddedContext": True}
        await proc.close_stdin()
        assert await asyncio.wait_for(proc.wait(), 30) == 0
        assert not list(tmp_path.rglob("*.jsonl"))
    finally:
        await proc.kill()
