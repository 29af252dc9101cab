"""Faults that used to freeze, wedge or bloat the agent, reproduced through the real RPC process."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.support.rpc_helpers import PYTHON, RpcProcess


def _env(tmp_path: Path, script: list[dict[str, Any]] | None = None) -> dict[str, str]:
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(tmp_path / "agent"), "HOME": str(tmp_path)}
    if script is not None:
        path = tmp_path / "script.json"
        path.write_bytes(orjson.dumps(script))
        env["PI_FAUX_SCRIPT"] = str(path)
    return env


async def _faux_pi(tmp_path: Path, script: list[dict[str, Any]] | None, *args: str) -> RpcProcess:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return await RpcProcess.pi("--provider", "faux", "--model", "faux-1", *args, cwd=work, env=_env(tmp_path, script))


def _tool_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"content": [{"type": "toolCall", "name": name, "arguments": arguments}]}


async def _run_prompt(pi: RpcProcess, text: str) -> list[dict[str, Any]]:
    await pi.send({"type": "prompt", "id": "p", "message": text})
    return await pi.read_until(lambda r: r.get("type") == "agent_settled")


@pytest.mark.slow
async def test_special_files_are_refused_and_never_wedge_exit(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    fifo = tmp_path / "work" / "pipe"
    os.mkfifo(fifo)
    script = [
        _tool_call("read", {"path": "pipe"}),
        _tool_call("edit", {"path": "pipe", "edits": [{"oldText": "a", "newText": "b"}]}),
        _tool_call("write", {"path": "pipe", "content": "x"}),
        _tool_call("read", {"path": "/dev/zero"}),
        {"content": [{"type": "text", "text": "done"}]},
    ]
    pi = await _faux_pi(tmp_path, script, "--no-session")
    records = await asyncio.wait_for(_run_prompt(pi, "go"), 60)
    ends = [r for r in records if r["type"] == "tool_execution_end"]
    assert [(e["toolName"], e["isError"]) for e in ends] == [("read", True), ("edit", True), ("write", True),
                                                             ("read", True)]
    texts = [e["result"]["content"][0]["text"] for e in ends]
    assert texts[0] == "pipe is a FIFO, not a regular file: read only works on regular files"
    assert texts[1].startswith("pipe is a FIFO") and texts[2].startswith("pipe is a FIFO")
    assert texts[3] == "/dev/zero is a character device, not a regular file: read only works on regular files"
    started = time.monotonic()
    await pi.close_stdin()
    assert await pi.wait() == 0
    assert time.monotonic() - started < 10
    assert "Task exception was never retrieved" not in await pi.stderr_text()


@pytest.mark.slow
def test_a_blocked_file_thread_does_not_hold_the_process(tmp_path: Path) -> None:
    """Even a thread stuck in open() forever (here: a FIFO nobody writes) lets asyncio.run and exit finish."""
    fifo = tmp_path / "stuck"
    os.mkfifo(fifo)
    program = (
        "import asyncio, sys\n"
        "from pi_coding_agent.coding.tools.blocking import run_blocking\n"
        "async def main():\n"
        "    task = asyncio.ensure_future(run_blocking(open, sys.argv[1], 'rb'))\n"
        "    await asyncio.sleep(0.2)\n"
        "    task.cancel()\n"
        "asyncio.run(main())\n"
        "print('exited')\n"
    )
    done = subprocess.run([PYTHON, "-c", program, str(fifo)], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and done.stdout == "exited\n", done.stderr


@pytest.mark.slow
async def test_sigint_shuts_down_in_order_and_saves_the_partial_answer(tmp_path: Path) -> None:
    slow = {"content": [{"type": "text", "text": "partial answer " * 200}], "delayMs": 20}
    pi = await _faux_pi(tmp_path, [slow], "--session-dir", str(tmp_path / "sessions"))
    await pi.send({"type": "prompt", "id": "p", "message": "go"})
    await pi.read_until(lambda r: r.get("assistantMessageEvent", {}).get("type") == "text_delta")
    os.kill(pi.proc.pid, signal.SIGINT)
    assert await pi.wait() == 130
    stderr = await pi.stderr_text()
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr
    [session_file] = (tmp_path / "sessions").rglob("*.jsonl")
    entries = [orjson.loads(line) for line in session_file.read_bytes().splitlines()]
    assistant = [e["message"] for e in entries if e.get("type") == "message" and e["message"]["role"] == "assistant"]
    assert assistant and assistant[-1]["stopReason"] == "aborted"
    assert assistant[-1]["content"][0]["text"].startswith("partial")


async def test_lines_with_bad_text_encoding_keep_their_id(tmp_path: Path) -> None:
    pi = await _faux_pi(tmp_path, None, "--no-session")
    await pi.write(b'{"id":"u1","type":"get_state","x":"\xff"}\n')
    await pi.write(b'{"id":"u2","type":"get_state","x":"\\ud800"}\n')
    await pi.write(b'{"type":"get_state","x":"\xff"}\n')
    await pi.write(b"not json\n")
    first, second, third, fourth = [await pi.read_record() for _ in range(4)]
    assert first["id"] == "u1" and second["id"] == "u2"
    for record in (first, second):
        assert record["type"] == "response" and record["command"] == "parse" and record["success"] is False
        assert record["error"].startswith("Failed to parse command: ")
    assert "id" not in third and third["command"] == "parse"
    assert "id" not in fourth and fourth["command"] == "parse"
    assert (await pi.request({"type": "get_state"}))["success"] is True  # still serving
    await pi.close_stdin()
    assert await pi.wait() == 0


def _peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


@pytest.mark.slow
async def test_output_backlog_stops_the_reader_and_bounds_memory(tmp_path: Path) -> None:
    """100 get_messages of a 5 MiB conversation while the client does not read: memory stays bounded."""
    pi = await _faux_pi(tmp_path, [{"content": [{"type": "text", "text": "ok"}]}], "--no-session")
    await _run_prompt(pi, "x" * (5 << 20))
    baseline = _peak_rss_mib(pi.proc.pid)
    for n in range(100):
        await pi.send({"type": "get_messages", "id": f"m{n}"})
    await asyncio.sleep(3)  # the client reads nothing meanwhile
    backlogged = _peak_rss_mib(pi.proc.pid)
    seen = set()
    while len(seen) < 100:
        record = await pi.read_record()
        if record.get("type") == "response":
            assert record["success"] is True and record["data"]["messages"][-1]["role"] == "assistant"
            seen.add(record["id"])
    # Unbounded, the queue held 100 x 5 MiB; bounded, a few records beyond the conversation itself.
    assert backlogged - baseline < 200, (baseline, backlogged)
    await pi.close_stdin()
    assert await pi.wait() == 0


@pytest.mark.slow
async def test_an_absurd_read_offset_is_printed_as_javascript_does(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "small.txt").write_text("one\ntwo\n")
    script = [_tool_call("read", {"path": "small.txt", "offset": 1e300}), {"content": [{"type": "text", "text": "ok"}]}]
    pi = await _faux_pi(tmp_path, script, "--no-session")
    records = await _run_prompt(pi, "go")
    [end] = [r for r in records if r["type"] == "tool_execution_end"]
    assert end["result"]["content"][0]["text"] == "Offset 1e+300 is beyond end of file (3 lines total)"



async def _wait_for_pid(path: Path) -> int:
    for _ in range(400):
        if path.exists() and path.read_text().strip():
            return int(path.read_text().split()[0])
        await asyncio.sleep(0.025)
    raise AssertionError(f"{path} never written")


async def _gone(pid: int) -> bool:
    for _ in range(200):
        try:
            os.kill(pid, 0)
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                return True
        except (ProcessLookupError, FileNotFoundError):
            return True
        await asyncio.sleep(0.05)
    return False


DAEMON = (
    "import os, sys, time\n"
    "if os.fork(): sys.exit(0)\n"
    "os.setsid()\n"
    "if os.fork(): sys.exit(0)\n"
    "open(sys.argv[1], 'w').write(str(os.getpid()))\n"
    "time.sleep(300)\n"
)


@pytest.mark.slow
async def test_abort_kills_what_left_the_process_group(tmp_path: Path) -> None:
    """setsid and a double-forked daemon escape the command's group; abort still finds and kills them."""
    pi = await _faux_pi(tmp_path, None, "--no-session")
    (tmp_path / "daemon.py").write_text(DAEMON)
    command = (f"setsid sleep 300 & echo $! > {tmp_path}/setsid.pid; {PYTHON} {tmp_path}/daemon.py "
               f"{tmp_path}/daemon.pid; sleep 300")
    await pi.send({"type": "bash", "id": "b", "command": command})
    escaped = [await _wait_for_pid(tmp_path / "setsid.pid"), await _wait_for_pid(tmp_path / "daemon.pid")]
    assert all(os.getpgid(pid) != os.getpgid(pi.proc.pid) for pid in escaped)
    await pi.send({"type": "abort_bash", "id": "a"})
    response, _ = await pi.response_to("b")
    assert response["data"]["cancelled"] is True
    for pid in escaped:
        assert await _gone(pid), f"{pid} outlived the abort"
    await pi.close_stdin()
    assert await pi.wait() == 0


@pytest.mark.slow
async def test_full_output_files_are_removed_at_exit(tmp_path: Path) -> None:
    pi = await _faux_pi(tmp_path, None, "--no-session")
    response = await pi.request({"type": "bash", "command": "seq 1 100000"})
    full = Path(response["data"]["fullOutputPath"])
    assert full.exists() and response["data"]["truncated"] is True
    await pi.close_stdin()
    assert await pi.wait() == 0
    assert not full.exists()


@pytest.mark.slow
async def test_a_key_command_runs_off_the_event_loop_once_and_says_why_it_failed(tmp_path: Path) -> None:
    """``"apiKey": "!sleep 100"``: commands keep being answered meanwhile, the command runs once (pi's
    10 s limit, 4 s here through ``PI_KEY_COMMAND_TIMEOUT_S``) and the prompt's error names the
    provider, the command and the timeout."""
    agent = tmp_path / "agent"
    agent.mkdir()
    counter = tmp_path / "runs"
    (agent / "models.json").write_bytes(orjson.dumps({"providers": {"slow": {
        "baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions",
        "apiKey": f"!echo run >> {counter}; sleep 100", "models": [{"id": "m"}]}}}))
    env = {**_env(tmp_path), "PI_KEY_COMMAND_TIMEOUT_S": "4"}
    pi = await RpcProcess.pi("--provider", "slow", "--model", "m", "--no-session", cwd=tmp_path, env=env)
    await pi.send({"type": "prompt", "id": "p", "message": "hi"})
    for _ in range(300):  # until the command runs
        if counter.exists():
            break
        await asyncio.sleep(0.02)
    started = time.monotonic()
    await pi.send({"type": "get_state", "id": "s"})
    state, before = await pi.response_to("s")
    answered_in = time.monotonic() - started
    assert state["success"] is True and answered_in < 3, answered_in
    assert not any(r.get("id") == "p" for r in before)  # answered while the command still ran
    response, _ = await pi.response_to("p")
    assert response["success"] is False
    assert response["error"] == "The API key command for slow timed out after 4 s: echo run >> " + \
        f"{counter}; sleep 100"
    assert counter.read_text() == "run\n"  # once, not once per key lookup
    await pi.close_stdin()
    assert await pi.wait() == 0


async def test_a_malformed_auth_json_is_named_on_stderr(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "auth.json").write_text('{"openai": {"type":')
    pi = await _faux_pi(tmp_path, None, "--no-session")
    assert (await pi.request({"type": "get_state"}))["success"] is True
    await pi.close_stdin()
    assert await pi.wait() == 0
    assert f"Warning: {agent / 'auth.json'}: invalid JSON (" in await pi.stderr_text()
