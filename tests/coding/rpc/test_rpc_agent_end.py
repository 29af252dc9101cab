"""``agent_end`` reaches stdout before ``agent_settled`` is written, as in pi 1.6.0.

A client such as the Emacs package pi-coding-agent handles each chunk it reads and, on ``agent_end``,
checks that it is the last event it has seen. That fails when both records come in one write. The
client here reads stdout in raw chunks, as such a client does, and checks exactly that for several runs.
pi only waits until agent_end is on stdout, so its client may still read both at once; ours waits until the
client has read it (bounded), so the check holds however late the client is scheduled.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tests.support.cli_sides import FAKE_MODEL, fake_agent_env, needs_reference, pi_command
from tests.support.fakes.llm_server import FakeLLMServer

RUNS = 5
T = TypeVar("T")


async def chunks_around_agent_end(kind: str, root: Path) -> list[list[str]]:
    """For each run, the record types read so far at the moment the chunk with ``agent_end`` arrived."""
    replies = [reply for index in range(RUNS) for reply in (
        {"content": [{"type": "toolCall", "name": "bash", "arguments": {"command": f"echo {index}"}}]},
        {"content": [{"type": "text", "text": f"done {index}"}]})]
    return await _driven(kind, root, replies, _drive, 120)


async def _driven(kind: str, root: Path, replies: list[dict[str, Any]],
                  drive: Callable[[asyncio.subprocess.Process], Awaitable[T]], timeout_s: float) -> T:
    """``drive`` a fresh ``pi --mode rpc`` of one side whose fake model gives ``replies``, then kill it."""
    with FakeLLMServer() as server:
        for reply in replies:
            server.add(reply)
        cwd = root / kind / "work"
        cwd.mkdir(parents=True)
        env = fake_agent_env(root / kind, server.url)
        command, env = pi_command(kind, ["--mode", "rpc", *FAKE_MODEL, "--no-session"], env)
        proc = await asyncio.create_subprocess_exec(*command, cwd=cwd, env=env, stdin=asyncio.subprocess.PIPE,
                                                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
        try:
            return await asyncio.wait_for(drive(proc), timeout_s)
        finally:
            proc.kill()
            await proc.wait()


async def _drive(proc: asyncio.subprocess.Process) -> list[list[str]]:
    assert proc.stdin is not None and proc.stdout is not None
    seen: list[list[str]] = []
    for index in range(RUNS):
        proc.stdin.write(json.dumps({"type": "prompt", "id": f"p{index}", "message": f"run {index}"}).encode() + b"\n")
        await proc.stdin.drain()
        buffered, types = b"", []
        while "agent_settled" not in types:
            chunk = await proc.stdout.read(1 << 16)
            assert chunk, "stdout closed"
            *lines, buffered = (buffered + chunk).split(b"\n")
            types += [_type(json.loads(line)) for line in lines]
            if "agent_end" in types and len(seen) == index:
                seen.append(list(types))
    return seen


def _type(record: dict[str, Any]) -> str:
    return str(record["type"])


@pytest.mark.slow
def test_agent_end_is_the_last_record_when_it_arrives(tmp_path):
    for types in asyncio.run(chunks_around_agent_end("ours", tmp_path)):
        assert types[-1] == "agent_end", types[-3:]


@needs_reference
def test_reference_writes_agent_end_first_but_races_the_reader(tmp_path):
    """pi 1.6.0 writes agent_settled once agent_end is on stdout, not once it was read: a reader that
    is scheduled late gets both in one chunk (docs/rpc.md). The order is the same as ours."""
    for types in asyncio.run(chunks_around_agent_end("reference", tmp_path)):
        assert types[-1] == "agent_end" or types[-2:] == ["agent_end", "agent_settled"], types[-3:]


async def prompts_sent_on_agent_end(kind: str, root: Path) -> list[dict[str, Any]]:
    """The responses to prompts each written the moment the previous run's ``agent_end`` is read
    (a client that does not wait for ``agent_settled``)."""
    replies = [{"content": [{"type": "text", "text": f"done {index}"}]} for index in range(RUNS)]
    return await _driven(kind, root, replies, _prompt_on_agent_end, 60)


async def _prompt_on_agent_end(proc: asyncio.subprocess.Process) -> list[dict[str, Any]]:
    assert proc.stdin is not None and proc.stdout is not None
    responses: list[dict[str, Any]] = []
    for index in range(RUNS + 1):  # the last prompt's run is not waited for
        proc.stdin.write(json.dumps({"type": "prompt", "id": f"p{index}", "message": f"run {index}"}).encode() + b"\n")
        await proc.stdin.drain()
        while True:
            record = json.loads(await proc.stdout.readline())
            if record.get("type") == "response":
                responses.append(record)
                if index == RUNS or not record["success"]:  # a refused prompt starts no run to wait for
                    return responses
            elif record.get("type") == "agent_end":
                break
    return responses


@pytest.mark.slow
def test_a_prompt_sent_on_reading_agent_end_is_accepted(tmp_path):
    """Ours waits for the client to read agent_end before the run settles; a command that client
    sends meanwhile is handled once the run has settled, as pi (whose post-run steps do not wait)
    handles it, instead of being refused as arriving while the agent is still processing."""
    responses = asyncio.run(prompts_sent_on_agent_end("ours", tmp_path))
    assert [r["success"] for r in responses] == [True] * (RUNS + 1), responses


@needs_reference
def test_reference_accepts_a_prompt_sent_on_reading_agent_end(tmp_path):
    responses = asyncio.run(prompts_sent_on_agent_end("reference", tmp_path))
    assert [r["success"] for r in responses] == [True] * (RUNS + 1), responses
