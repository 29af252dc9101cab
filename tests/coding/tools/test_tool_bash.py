"""The bash tool and the RPC user-bash executor: exit codes, timeout, abort, truncation, process trees."""

import asyncio
import os
import re
import stat
from pathlib import Path
from typing import Any

import pytest

from pi_coding_agent.agent.tool import ToolError, ToolResult
from pi_coding_agent.ai.abort import AbortSignal
from pi_coding_agent.coding.tools.base import ToolEnv
from pi_coding_agent.coding.tools.builtin import create_builtin_tools
from pi_coding_agent.coding.tools.shell import ShellError
from pi_coding_agent.coding.tools.user_bash import run_user_bash


def env_for(tmp_path: Path, **kwargs: Any) -> ToolEnv:
    return ToolEnv(cwd=tmp_path, **kwargs)


async def bash(env: ToolEnv, signal: AbortSignal | None = None, updates: list[ToolResult] | None = None,
               **params: Any) -> ToolResult:
    tool = create_builtin_tools(env)["bash"]
    sink = updates if updates is not None else []
    return await tool.execute("t", params, signal or AbortSignal(), sink.append)


def text_of(result: ToolResult) -> str:
    return result.content[0]["text"]


def alive(pid: int) -> bool:
    try:  # a zombie is dead for our purposes; so is one reaped between the kill and the read
        os.kill(pid, 0)
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


async def wait_gone(pid: int) -> bool:
    for _ in range(200):
        if not alive(pid):
            return True
        await asyncio.sleep(0.01)
    return False


async def test_success_output_and_first_empty_update(tmp_path: Path) -> None:
    updates: list[ToolResult] = []
    result = await bash(env_for(tmp_path), updates=updates, command="echo out; echo err >&2; pwd")
    assert text_of(result) == f"out\nerr\n{tmp_path}\n"
    assert result.is_error is False and result.details is None
    assert updates[0].to_wire() == {"content": []}
    assert updates[-1].content == [{"type": "text", "text": f"out\nerr\n{tmp_path}\n"}]


async def test_no_output_placeholder(tmp_path: Path) -> None:
    assert text_of(await bash(env_for(tmp_path), command="true")) == "(no output)"


async def test_nonzero_exit_is_error_with_status(tmp_path: Path) -> None:
    result = await bash(env_for(tmp_path), command="echo bad; exit 3")
    assert result.is_error is True
    assert text_of(result) == "bad\n\n\nCommand exited with code 3"


async def test_signal_exit_code_is_128_plus_signal(tmp_path: Path) -> None:
    result = await bash(env_for(tmp_path), command="kill -TERM $$")
    assert text_of(result) == "(no output)\n\nCommand exited with code 143"


@pytest.mark.parametrize(
    ("timeout", "message"),
    [
        (0, "Invalid timeout: must be a finite number of seconds"),
        (-1, "Invalid timeout: must be a finite number of seconds"),
        (float("inf"), "Invalid timeout: must be a finite number of seconds"),
        (3_000_000, "Invalid timeout: maximum is 2147483.647 seconds"),
    ],
)
async def test_timeout_validation(tmp_path: Path, timeout: float, message: str) -> None:
    with pytest.raises(ToolError) as info:
        await bash(env_for(tmp_path), command="true", timeout=timeout)
    assert str(info.value) == message


async def test_session_env_path_and_prefix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_SESSION_FILE", "inherited")
    env = env_for(
        tmp_path,
        session_env=lambda: {"PI_SESSION_ID": "sid", "PI_MODEL": "m"},
        agent_dir=tmp_path / "agent",
        shell_command_prefix="X=prefixed",
    )
    result = await bash(env, command='echo "$PI_SESSION_ID|$PI_MODEL|${PI_SESSION_FILE-unset}|$X|${PATH%%:*}"')
    assert text_of(result) == f"sid|m|unset|prefixed|{tmp_path / 'agent' / 'bin'}\n"


async def test_missing_shell_and_cwd(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match=r"^Custom shell path not found: /no/shell$"):
        await bash(env_for(tmp_path, shell_path="/no/shell"), command="true")
    gone = tmp_path / "gone"
    with pytest.raises(ToolError) as info:
        await bash(ToolEnv(cwd=gone), command="true")
    assert str(info.value) == f"Working directory does not exist: {gone}\nCannot execute bash commands."


async def test_truncation_keeps_tail_and_saves_full_output(tmp_path: Path) -> None:
    result = await bash(env_for(tmp_path), command="seq 1 5000")
    text = text_of(result)
    details = result.details
    path = details["fullOutputPath"]
    assert re.fullmatch(r".*/pi-bash-[0-9a-f]{16}\.log", path)
    assert text.endswith(f"\n5000\n\n[Showing lines 3001-5000 of 5000. Full output: {path}]")
    assert details["truncation"]["truncatedBy"] == "lines"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert Path(path).read_text() == "".join(f"{i}\n" for i in range(1, 5001))
    os.unlink(path)


async def test_byte_truncation_and_partial_last_line(tmp_path: Path) -> None:
    result = await bash(env_for(tmp_path), command="head -c 100000 /dev/zero | tr '\\0' x")
    text = text_of(result)
    path = result.details["fullOutputPath"]
    assert text.endswith(f"\n\n[Showing last 50.0KB of line 1 (line is 97.7KB). Full output: {path}]")
    assert result.details["truncation"]["lastLinePartial"] is True
    os.unlink(path)


@pytest.mark.slow
async def test_timeout_kills_process_tree(tmp_path: Path) -> None:
    pid_file = tmp_path / "pids"
    command = f"sleep 100 & echo $! > {pid_file}; bash -c 'echo $$ >> {pid_file}; sleep 100'; echo after"
    with pytest.raises(ToolError) as info:
        await bash(env_for(tmp_path), command=command, timeout=0.5)
    assert str(info.value) == "Command timed out after 0.5 seconds"
    pids = [int(p) for p in pid_file.read_text().split()]
    assert len(pids) == 2
    for pid in pids:
        assert await wait_gone(pid)


async def test_abort_kills_process_tree_and_keeps_output(tmp_path: Path) -> None:
    pid_file = tmp_path / "pids"
    signal = AbortSignal()
    command = f"echo begin; sleep 100 & echo $! > {pid_file}; bash -c 'echo $$ >> {pid_file}; sleep 100'"
    task = asyncio.ensure_future(bash(env_for(tmp_path), signal, command=command))
    while not (pid_file.exists() and len(pid_file.read_text().split()) == 2):
        await asyncio.sleep(0.02)
    signal.abort()
    with pytest.raises(ToolError) as info:
        await task
    assert str(info.value) == "begin\n\n\nCommand aborted"
    for pid in (int(p) for p in pid_file.read_text().split()):
        assert await wait_gone(pid)


async def test_cancelling_the_task_kills_the_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    task = asyncio.ensure_future(bash(env_for(tmp_path), command=f"sleep 100 & echo $! > {pid_file}; wait"))
    while not pid_file.exists() or not pid_file.read_text().strip():
        await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await wait_gone(int(pid_file.read_text()))


async def test_background_job_holding_the_pipe_does_not_hang(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    result = await bash(env_for(tmp_path), command=f"sleep 30 & echo $! > {pid_file}; echo done")
    assert text_of(result) == "done\n"
    os.kill(int(pid_file.read_text()), 9)  # pi leaves background jobs running; clean up ours


async def test_kill_all_kills_tracked_groups(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    env = env_for(tmp_path)
    task = asyncio.ensure_future(bash(env, command=f"sleep 100 & echo $! > {pid_file}; wait"))
    while not pid_file.exists() or not pid_file.read_text().strip():
        await asyncio.sleep(0.02)
    env.processes.kill_all()
    result = await task
    assert text_of(result) == "(no output)\n\nCommand exited with code 137"
    assert await wait_gone(int(pid_file.read_text()))


async def test_user_bash_cleans_output_and_streams(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_MODEL", "leaked")
    deltas: list[str] = []
    result = await run_user_bash(
        "printf '\\033[31mred\\033[0m\\r\\n\\001bell\\n'; echo ${PI_MODEL-none}; exit 4",
        env_for(tmp_path), deltas.append, AbortSignal(),
    )
    assert result == {"output": "red\nbell\nnone\n", "exitCode": 4, "cancelled": False, "truncated": False}
    assert "".join(deltas) == "red\nbell\nnone\n"


async def test_user_bash_truncates_with_temp_file(tmp_path: Path) -> None:
    deltas: list[str] = []
    result = await run_user_bash("seq 1 30000", env_for(tmp_path), deltas.append, AbortSignal())
    assert result["truncated"] is True
    assert result["output"].endswith("\n30000")
    assert len(result["output"].split("\n")) == 2000
    full = Path(result["fullOutputPath"]).read_text()
    assert full == "".join(deltas) == "".join(f"{i}\n" for i in range(1, 30001))
    os.unlink(result["fullOutputPath"])


async def test_user_bash_abort_is_cancelled_without_exit_code(tmp_path: Path) -> None:
    signal = AbortSignal()
    deltas: list[str] = []
    task = asyncio.ensure_future(run_user_bash("echo go; sleep 100", env_for(tmp_path), deltas.append, signal))
    while not deltas:
        await asyncio.sleep(0.02)
    signal.abort()
    result = await task
    assert result == {"output": "go\n", "cancelled": True, "truncated": False}


async def test_user_bash_start_failure_raises(tmp_path: Path) -> None:
    with pytest.raises(ShellError, match=r"^Custom shell path not found: /nope$"):
        await run_user_bash("true", env_for(tmp_path, shell_path="/nope"), lambda _: None, AbortSignal())


async def test_structured_content_for_programmatic_callers(tmp_path: Path) -> None:
    result = await bash(env_for(tmp_path), command="echo out; exit 2")
    structured = result.to_wire()["structuredContent"]
    assert structured["output"] == "out\n" and structured["truncated"] is False
    assert structured["exit_code"] == 2 and "full_output_path" not in structured
    assert 0 <= structured["wall_time_seconds"] < 60


async def test_structured_output_keeps_head_and_tail_of_huge_output(tmp_path: Path) -> None:
    # 3 MB of numbered lines: over the 1 MiB cap of structuredContent.output
    result = await bash(env_for(tmp_path), command="seq 1 400000")
    structured = result.structured_content
    path = result.details["fullOutputPath"]
    assert structured["truncated"] is True and structured["full_output_path"] == path
    head, marker_and_tail = structured["output"].split("\n\n[... ", 1)
    omitted, tail = marker_and_tail.split(" bytes omitted ...]\n\n", 1)
    assert head.startswith("1\n2\n3\n") and tail.endswith("399999\n400000\n")
    total = os.path.getsize(path)
    assert int(omitted) == total - 1024 * 1024
    assert len(head.encode()) + len(tail.encode()) <= 1024 * 1024
    os.unlink(path)
