"""Run one ``pi`` command line against ours or the reference pi 1.6.0, each with its own agent dir.

The command-line tests (``@file``, print-mode failures, refusals, agent_end timing) start a fresh process
per case on either side; this is the one place that knows how each side is started.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.reference_pi import REFERENCE_PI, reference_path

needs_reference = pytest.mark.reference  # skipped, with the reason, without it (tests/conftest.py)

FAKE_MODEL = ["--provider", "fake", "--model", "fake-model"]


def pi_command(kind: str, argv: list[str], env: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """The argv and environment that start ``pi <argv>``; ``kind`` is ``ours`` or ``reference``."""
    if kind == "ours":
        return [sys.executable, "-m", "pi_coding_agent", *argv], env
    return [str(REFERENCE_PI), *argv], {**env, "PATH": reference_path(env.get("PATH", ""))}


def fake_agent_env(home: Path, server_url: str, settings: dict[str, Any] | None = None,
                   **model: Any) -> dict[str, str]:
    """A HOME whose agent dir routes provider ``fake`` / model ``fake-model`` to ``server_url``."""
    agent_dir = home / "agent"
    agent_dir.mkdir(parents=True, exist_ok=True)
    (agent_dir / "models.json").write_text(json.dumps({"providers": {"fake": {
        "baseUrl": f"{server_url}/v1", "api": "openai-completions", "apiKey": "dummy",
        "models": [{"id": "fake-model", **model}]}}}))
    if settings is not None:
        (agent_dir / "settings.json").write_text(json.dumps(settings))
    return {**os.environ, "HOME": str(home), "PI_CODING_AGENT_DIR": str(agent_dir), "PI_OFFLINE": "1"}


def rpc_turns(kind: str, argv: list[str], env: dict[str, str], cwd: Path, prompts: list[dict[str, Any]],
              linger_s: float = 0.0) -> None:
    """``pi --mode rpc <argv>`` on one side: each prompt sent once the previous run settled (another
    command once the previous one was answered), then killed.

    ``linger_s`` keeps the process alive after the last turn (for background work such as cache warming).
    """
    import subprocess
    import time

    command, env = pi_command(kind, ["--mode", "rpc", *argv], env)
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env=env, cwd=cwd, text=True)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        for prompt in prompts:
            proc.stdin.write(json.dumps(prompt) + "\n")
            proc.stdin.flush()
            ends = "agent_settled" if prompt.get("type") == "prompt" else "response"
            for line in proc.stdout:
                if json.loads(line).get("type") == ends:
                    break
        time.sleep(linger_s)
    finally:
        proc.kill()
        proc.wait()
