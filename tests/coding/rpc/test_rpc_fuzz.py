"""Seeded fuzzing of the real ``pi --mode rpc``: every input line gets exactly one response, the
process keeps serving, and nothing but JSON records reaches stdout, whatever clients send."""

from __future__ import annotations

import json
import os
import random
import string
from pathlib import Path
from typing import Any

from pi_coding_agent.coding.modes.rpc.commands import COMMANDS
from tests.support.rpc_helpers import RpcProcess

# Commands that would run random shell text are left out: the point is the protocol, not the shell.
SAFE_COMMANDS = sorted(name for name in COMMANDS if name not in ("bash",))
FIELDS = ("message", "images", "streamingBehavior", "provider", "modelId", "level", "mode", "enabled",
          "customInstructions", "command", "sessionPath", "entryId", "since", "name", "outputPath",
          "parentSession", "excludeFromContext", "id")


def _value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(9 if depth < 2 else 6)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        return rng.randint(-(2**63), 2**63)
    if kind == 3:
        return rng.random() * 1e6
    if kind in (4, 5):
        return "".join(rng.choice(string.ascii_letters + " -_\u2028\u00e9\U0001f600") for _ in range(rng.randrange(12)))
    if kind == 6:
        return [_value(rng, depth + 1) for _ in range(rng.randrange(3))]
    return {rng.choice(FIELDS): _value(rng, depth + 1) for _ in range(rng.randrange(3))}


def _line(rng: random.Random, index: int) -> bytes:
    roll = rng.random()
    if roll < 0.15:  # not JSON at all
        return bytes(rng.randrange(1, 256) for _ in range(rng.randrange(40))).replace(b"\n", b" ")
    if roll < 0.25:  # JSON, but not a command object
        return json.dumps(_value(rng)).encode()
    record: dict[str, Any] = {"type": rng.choice(SAFE_COMMANDS), "id": f"f{index}"}
    for _ in range(rng.randrange(4)):
        record[rng.choice(FIELDS[:-1])] = _value(rng)
    return json.dumps(record).encode()


async def test_random_input_never_breaks_the_protocol(tmp_path: Path) -> None:
    rng = random.Random(20261130)
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(tmp_path / "agent"), "HOME": str(tmp_path)}
    pi = await RpcProcess.pi("--no-session", cwd=tmp_path, env=env)
    lines = [_line(rng, i) for i in range(300)]
    await pi.write(b"".join(line + b"\n" for line in lines))
    await pi.send({"type": "get_state", "id": "final"})
    responses: list[dict[str, Any]] = []
    final: dict[str, Any] | None = None
    while final is None or len(responses) < len(lines):  # commands run concurrently: any order
        record = await pi.read_record()  # raises if stdout carried anything but a JSON record
        if record.get("type") != "response":
            continue
        if record.get("id") == "final":
            final = record
        else:
            responses.append(record)
    assert len(responses) == len(lines)
    assert final["success"] is True and final["data"]["isStreaming"] in (True, False)
    errors = {r["error"].split(":")[0] for r in responses if not r["success"]}
    assert {"Failed to parse command", "Unknown command"} <= errors and len(errors) > 10  # varied paths
    await pi.close_stdin()
    assert await pi.wait() == 0
    assert "Traceback" not in await pi.stderr_text()
