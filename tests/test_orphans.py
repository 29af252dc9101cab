"""Commands started by pi never outlive it, even when pi is killed with SIGKILL and runs no cleanup."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from tests.support.rpc_helpers import RpcProcess


def _alive(pid: int) -> bool:
    try:  # a zombie waiting for its reaper, or one reaped between the kill and the read, is gone
        os.kill(pid, 0)
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


async def _gone(pid: int, seconds: float = 10) -> bool:
    for _ in range(int(seconds / 0.05)):
        if not _alive(pid):
            return True
        await asyncio.sleep(0.05)
    return False


@pytest.mark.slow
async def test_sigkill_of_pi_still_kills_running_command_groups(tmp_path: Path) -> None:
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(tmp_path / "agent"), "HOME": str(tmp_path)}
    pi = await RpcProcess.pi("--no-session", cwd=tmp_path, env=env)
    pid_file = tmp_path / "pids"
    # a background job and a foreground child, both in the command's process group
    await pi.send({"type": "bash", "id": "b", "command": f"sleep 300 & echo $! > {pid_file}; sleep 300"})
    for _ in range(200):
        if pid_file.exists() and pid_file.read_text().strip():
            break
        await asyncio.sleep(0.05)
    background = int(pid_file.read_text())
    assert _alive(background)
    os.kill(pi.proc.pid, signal.SIGKILL)  # no handler runs: only the guard can clean up
    await pi.proc.wait()
    assert await _gone(background), "the background job outlived pi"


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                status = Path(f"/proc/{entry}/status").read_text()
            except OSError:
                continue
            if f"\nPPid:\t{pid}\n" in status:
                found.append(int(entry))
    return found


async def test_the_guard_leaves_with_pi(tmp_path: Path) -> None:
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(tmp_path / "agent"), "HOME": str(tmp_path)}
    pi = await RpcProcess.pi("--no-session", cwd=tmp_path, env=env)
    response = await pi.request({"type": "bash", "command": "echo done"})
    assert response["data"]["output"] == "done\n" and response["data"]["exitCode"] == 0
    guards = _children(pi.proc.pid)  # the command has finished: only the guard is left
    assert len(guards) == 1
    await pi.close_stdin()
    assert await pi.wait() == 0
    assert await _gone(guards[0]), "the guard outlived pi"


async def test_a_client_that_dies_with_its_pipes_leaves_no_agent_behind(tmp_path: Path) -> None:
    """The client dies (stdout and stderr read ends gone, then stdin): pi's next record meets a broken
    stdout and its warning a broken stderr; neither may stop the shutdown that EOF starts. (An
    agent once hung here for good: the warning raised, the shutdown's report of it raised again.)"""
    import subprocess
    import sys

    from tests.support.rpc_helpers import ROOT

    env = {**os.environ, "PI_CODING_AGENT_DIR": str(tmp_path / "agent"), "HOME": str(tmp_path)}
    proc = subprocess.Popen([sys.executable, "-m", "pi_coding_agent", "--mode", "rpc", "--no-session"],
                            cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        proc.stdin.write(b'{"type":"get_state","id":"1"}\n')
        proc.stdin.flush()
        assert b'"id":"1"' in proc.stdout.readline()  # started and serving
        proc.stdout.close()
        proc.stderr.close()
        proc.stdin.write(b'{"type":"get_state","id":"2"}\n{"type":"get_messages","id":"3"}\n')
        proc.stdin.close()
        assert await _gone(proc.pid), "pi kept running after its client died"
    finally:
        proc.kill()
        proc.wait()


async def test_the_guard_kills_only_the_groups_still_listed() -> None:
    """The guard's own bookkeeping: a group announced as ended is spared, the others are killed."""
    from pi_coding_agent.coding.tools.guard import OrphanGuard

    groups = [await asyncio.create_subprocess_exec("sleep", "30", start_new_session=True) for _ in range(3)]
    guard = OrphanGuard()
    for proc in groups:
        guard.started(proc.pid)
    guard.ended(groups[1].pid)
    assert guard._proc is not None and guard._proc.stdin is not None
    guard._proc.stdin.close()  # what pi's death looks like to the guard
    guard._proc.wait(10)
    try:
        assert await _gone(groups[0].pid) and await _gone(groups[2].pid)
        assert _alive(groups[1].pid), "the guard killed a group that had ended"
    finally:
        groups[1].kill()
        for proc in groups:
            await proc.wait()
