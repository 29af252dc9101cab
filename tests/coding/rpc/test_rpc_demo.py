"""The README's "run the agent" command: the demo drives pi through the client with the faux provider."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.support.fakes.llm_server import FakeLLMServer
from tests.support.rpc_helpers import PYTHON, ROOT


@pytest.mark.slow
def test_demo_makes_real_tool_calls_in_a_temp_dir() -> None:
    result = subprocess.run([PYTHON, str(ROOT / "examples" / "rpc_demo.py")], capture_output=True, text=True,
                            timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert 'tool_execution_start write {"path": "hello.txt", "content": "Hello from pi!\\n"}' in lines
    assert any(line.startswith("tool_execution_end read isError=False: 'Hello from pi!'") for line in lines)
    assert lines[-2:] == ['answer: Done: hello.txt exists and says "Hello from pi!".', "files: ['hello.txt']"]


@pytest.mark.slow
def test_demo_reports_a_failing_provider_and_exits_1(tmp_path: Path) -> None:
    """A provider answering 401: the error text is shown and the demo's status says it failed."""
    with FakeLLMServer() as server:
        server.add({"status": 401, "body": {"error": {"message": "Incorrect API key provided: bad"}}})
        agent_dir = tmp_path / "agent"
        agent_dir.mkdir()
        (agent_dir / "models.json").write_text(json.dumps({"providers": {"fake": {
            "baseUrl": f"{server.url}/v1", "api": "openai-completions", "apiKey": "bad",
            "models": [{"id": "fake-model"}]}}}))
        env = {**os.environ, "PI_CODING_AGENT_DIR": str(agent_dir), "HOME": str(tmp_path)}
        result = subprocess.run([PYTHON, str(ROOT / "examples" / "rpc_demo.py"), "--model", "fake/fake-model"],
                                capture_output=True, text=True, timeout=120, check=False, env=env)
    assert result.returncode == 1
    assert "Incorrect API key provided" in result.stdout  # the message_end line shows the error
    assert result.stderr.strip().splitlines()[-1].startswith("error: fake/fake-model: ")
    assert "answer:" not in result.stdout
