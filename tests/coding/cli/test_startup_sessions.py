"""Start-up session selection: --session by path, id or id prefix, --session-id, --continue."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PI = [sys.executable, "-m", "pi_coding_agent"]


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "PI_CODING_AGENT_DIR": str(tmp_path / "agent"), "HOME": str(tmp_path)}


def _state(tmp_path: Path, *args: str) -> dict:
    proc = subprocess.run([*PI, "--mode", "rpc", "--provider", "faux", "--model", "faux-1", *args],
                          input=b'{"type":"get_state","id":"s"}\n', capture_output=True, cwd=tmp_path,
                          env=_env(tmp_path), timeout=60, check=True)
    return json.loads(proc.stdout.splitlines()[0])["data"]


def _new_session(tmp_path: Path, prompt: str) -> str:
    subprocess.run([*PI, "-p", prompt, "--provider", "faux", "--model", "faux-1"], cwd=tmp_path,
                   env=_env(tmp_path), capture_output=True, timeout=60, check=True)
    files = sorted((tmp_path / "agent" / "sessions").rglob("*.jsonl"), key=lambda p: p.stat().st_mtime)
    return json.loads(files[-1].read_text().splitlines()[0])["id"]


@pytest.mark.slow
def test_session_by_id_prefix_and_path(tmp_path: Path) -> None:
    session_id = _new_session(tmp_path, "first")
    by_prefix = _state(tmp_path, "--session", session_id[:13])
    assert by_prefix["sessionId"] == session_id and by_prefix["messageCount"] == 3  # system, user, assistant
    assert _state(tmp_path, "--session", by_prefix["sessionFile"])["sessionId"] == session_id


def test_unknown_session_id_exits_with_a_message(tmp_path: Path) -> None:
    proc = subprocess.run([*PI, "--mode", "rpc", "--session", "nosuch"], input=b"", capture_output=True,
                          cwd=tmp_path, env=_env(tmp_path), timeout=60)
    assert proc.returncode == 1
    assert proc.stderr.decode().strip().endswith("No session found matching 'nosuch'")
    assert proc.stdout == b""


@pytest.mark.slow
def test_session_id_opens_an_existing_session_or_creates_one(tmp_path: Path) -> None:
    session_id = _new_session(tmp_path, "first")
    assert _state(tmp_path, "--session-id", session_id)["messageCount"] == 3
    fresh = _state(tmp_path, "--session-id", "my-own-id")
    assert fresh["sessionId"] == "my-own-id" and fresh["messageCount"] == 0


@pytest.mark.slow
def test_continue_reopens_the_latest_session(tmp_path: Path) -> None:
    _new_session(tmp_path, "first")
    latest = _new_session(tmp_path, "second")
    assert _state(tmp_path, "--continue")["sessionId"] == latest


@pytest.mark.slow
def test_fork_copies_every_entry_into_a_new_session(tmp_path: Path) -> None:
    session_id = _new_session(tmp_path, "first")
    source = next((tmp_path / "agent" / "sessions").rglob(f"*_{session_id}.jsonl"))
    state = _state(tmp_path, "--fork", session_id[:8])
    assert state["sessionId"] != session_id and state["messageCount"] == 3
    forked = Path(state["sessionFile"]).read_text().splitlines()
    header = json.loads(forked[0])
    assert header["parentSession"] == str(source)
    original = source.read_text().splitlines()[1:]
    assert [json.loads(line)["id"] for line in forked[1:len(original) + 1]] == \
        [json.loads(line)["id"] for line in original]


def test_fork_conflicts_with_no_session(tmp_path: Path) -> None:
    proc = subprocess.run([*PI, "--mode", "rpc", "--fork", "x", "--no-session"], input=b"", capture_output=True,
                          cwd=tmp_path, env=_env(tmp_path), timeout=60)
    assert proc.returncode == 2 and b"--fork" in proc.stderr and proc.stdout == b""
