"""The README's "run the agent" command: the demo drives pi through the client with the faux provider."""

from __future__ import annotations

import subprocess

from tests.rpc_helpers import PYTHON, ROOT


def test_demo_makes_real_tool_calls_in_a_temp_dir() -> None:
    result = subprocess.run([PYTHON, str(ROOT / "examples" / "rpc_demo.py")], capture_output=True, text=True,
                            timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert 'tool_execution_start write {"path": "hello.txt", "content": "Hello from pi!\\n"}' in lines
    assert any(line.startswith("tool_execution_end read isError=False: 'Hello from pi!'") for line in lines)
    assert lines[-2:] == ['answer: Done: hello.txt exists and says "Hello from pi!".', "files: ['hello.txt']"]
