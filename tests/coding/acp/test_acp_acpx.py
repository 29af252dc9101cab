"""A third-party ACP client against ``pi --mode acp``: acpx (npm), a headless ACP command-line client.

acpx spawns our agent with ``--agent``, advertises client fs and terminal, auto-approves with
``--approve-all`` and prints the JSON-RPC traffic with ``--format json``. ``scripts/test.sh``
installs it in CI; it needs node >= 22.13, taken from the reference pi's install.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
from pathlib import Path

import pytest

from tests.support.acp_client import MODEL_ID, make_workspace
from tests.support.fakes.llm_server import FakeLLMServer
from tests.support.reference_pi import REFERENCE_NODE_BIN
from tests.support.requirements import ACPX
from tests.support.rpc_helpers import PYTHON

NODE_BIN = REFERENCE_NODE_BIN  # node 22 of the reference install: acpx needs >= 22.13, Debian's is older

pytestmark = [
    pytest.mark.acpx,
    pytest.mark.timeout(180),
]


@pytest.mark.slow
async def test_acpx_runs_a_prompt_with_a_tool_call_through_our_agent(tmp_path: Path,
                                                                    fake_llm: FakeLLMServer) -> None:
    cwd, env = make_workspace(tmp_path, fake_llm)
    fake_llm.add({"content": [{"type": "toolCall", "id": "c1", "name": "write",
                               "arguments": {"path": "hello.txt", "content": "hi from acpx\n"}}]},
                 {"content": [{"type": "text", "text": "File written."}]})
    agent = shlex.join([PYTHON, "-m", "pi_coding_agent", "--mode", "acp", "--provider", "fake", "--model", MODEL_ID])
    path = f"{NODE_BIN}:{os.environ['PATH']}"
    proc = await asyncio.create_subprocess_exec(
        str(ACPX), "--agent", agent, "--approve-all", "--format", "json", "--timeout", "120", "exec", "write hello",
        cwd=cwd, env={**os.environ, **env, "PATH": path}, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 150)
    assert proc.returncode == 0, err.decode()
    messages = [json.loads(line) for line in out.splitlines() if line.startswith(b"{")]
    methods = [m.get("method") for m in messages if "method" in m]
    assert methods[:3] == ["initialize", "session/new", "session/update"]
    assert "fs/write_text_file" in methods  # acpx offers its file system; the write went through it
    answers = [m for m in messages if m.get("result", {}).get("stopReason")]
    assert answers and answers[-1]["result"]["stopReason"] == "end_turn"
    updates = [m["params"]["update"] for m in messages if m.get("method") == "session/update"]
    assert any(u["sessionUpdate"] == "tool_call_update" and u.get("status") == "completed" for u in updates)
    text = "".join(u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk")
    assert text == "File written."
    assert (cwd / "hello.txt").read_text() == "hi from acpx\n"
