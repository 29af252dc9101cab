"""ACP mode against RPC mode: start-up to the first answer, and the cost of each streamed chunk.

Start-up: wall time from spawning the process to reading its first answer line: ``initialize`` for
``pi --mode acp``, ``get_state`` for ``pi --mode rpc`` (ours, and the reference pi 1.6.0 when
installed). Target: acp no slower than our rpc (ratio < 1 against it; the rpc row is the reference).

Streaming: one prompt whose reply is ``--chunks`` tiny text deltas from the fake LLM server
(``tests/support/fakes/llm_server.py``, OpenAI chat-completions wire), in both modes of our agent. The clock
and the CPU meter (``/proc/<pid>/stat``) run from writing the prompt to reading its end
(``agent_settled`` in rpc, the ``session/prompt`` answer in acp); per chunk = that divided by the
chunk count, so the difference is what a ``session/update`` costs over a ``message_update``.

Usage: .venv/bin/python bench/bench_acp.py [--runs 5] [--chunks 5000]
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import common
from bench_streaming import SETTLED, read_until, scripted_reply, start_server
from common import MODEL, PROVIDER, Row, median

GET_STATE = b'{"id":"s","type":"get_state"}\n'
INITIALIZE = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}\n'
ACP_NEW = '{{"jsonrpc":"2.0","id":1,"method":"session/new","params":{{"cwd":"{cwd}","mcpServers":[]}}}}\n'
ACP_PROMPT = ('{{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{{"sessionId":"{sid}",'
              '"prompt":[{{"type":"text","text":"stream please"}}]}}}}\n')
RPC_PROMPT = b'{"id":"p","type":"prompt","message":"stream please"}\n'


def _start(cmd: list[str], mode: str, home: Path) -> subprocess.Popen[bytes]:
    return common.spawn([*cmd, "--mode", mode, "--no-session", "--provider", PROVIDER, "--model", MODEL],
                        common.env_for(cmd, home, home / "agent"), cwd=home)


def first_answer_s(cmd: list[str], mode: str, request: bytes) -> float:
    """Spawn to the first stdout line, with a models.json in place (as a real user has)."""
    home = common.scratch_home()
    common.write_models_json(home / "agent", "http://127.0.0.1:9")
    proc = _start(cmd, mode, home)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        started = time.perf_counter()
        proc.stdin.write(request)
        proc.stdin.flush()
        proc.stdout.readline()
        return time.perf_counter() - started
    finally:
        common.stop(proc)
        common.cleanup(home)


def stream_once(mode: str, chunks: int) -> tuple[float, float, int]:
    """(wall s, CPU s, stdout bytes) of one streamed prompt in ``mode``."""
    home = common.scratch_home()
    script = home / "script.json"
    script.write_text(json.dumps([scripted_reply(chunks)]))
    server, url = start_server(script)
    common.write_models_json(home / "agent", url)
    proc = _start(common.ours_cmd(), mode, home)
    assert proc.stdin is not None and proc.stdout is not None
    fd = proc.stdout.fileno()
    try:
        prompt, done = _prepare(mode, proc.stdin.write, proc.stdin.flush, fd, home)
        output = bytearray()
        cpu_before, started = common.cpu_seconds(proc.pid), time.perf_counter()
        proc.stdin.write(prompt)
        proc.stdin.flush()
        read_until(fd, done, output)
        return time.perf_counter() - started, common.cpu_seconds(proc.pid) - cpu_before, len(output)
    finally:
        common.stop(proc)
        server.kill()
        server.wait()
        common.cleanup(home)


def _prepare(mode: str, write: Callable[[bytes], object], flush: Callable[[], None], fd: int,
             home: Path) -> tuple[bytes, bytes]:
    """Bring the session up; returns the prompt to send and the marker of its end."""
    if mode == "rpc":
        write(GET_STATE)
        flush()
        read_until(fd, b'"get_state"', bytearray())
        return RPC_PROMPT, SETTLED
    write(INITIALIZE + ACP_NEW.format(cwd=home).encode())
    flush()
    seen = bytearray()
    read_until(fd, b'"sessionId"', seen)
    line = next(raw for raw in bytes(seen).splitlines() if b'"sessionId"' in raw)
    session_id = json.loads(line)["result"]["sessionId"]
    return ACP_PROMPT.format(sid=session_id).encode(), b'"stopReason"'


def results(runs: int, chunks: int) -> list[Row]:
    ours = common.ours_cmd()
    rpc = median([first_answer_s(ours, "rpc", GET_STATE) for _ in range(runs)]) * 1000
    acp = median([first_answer_s(ours, "acp", INITIALIZE) for _ in range(runs)]) * 1000
    ref_cmd = common.reference_cmd()
    ref = median([first_answer_s(ref_cmd, "rpc", GET_STATE) for _ in range(runs)]) * 1000 if ref_cmd else None
    rows = [Row("start-up", "acp initialize vs our rpc get_state", "ms", acp, rpc, 1.0),
            Row("start-up", "our rpc get_state vs reference rpc", "ms", rpc, ref)]
    samples: dict[str, list[tuple[float, float, int]]] = {"rpc": [], "acp": []}
    for _ in range(runs):  # the modes take turns, so they share the machine's load
        for mode in ("rpc", "acp"):
            samples[mode].append(stream_once(mode, chunks))
    for index, (name, unit, scale) in enumerate((("wall per chunk", "us", 1e6 / chunks),
                                                 ("CPU per chunk", "us", 1e6 / chunks),
                                                 ("stdout per chunk", "B", 1 / chunks))):
        acp_value, rpc_value = (median([s[index] for s in samples[m]]) * scale for m in ("acp", "rpc"))
        rows.append(Row(f"stream {chunks} chunks", f"{name}: session/update vs message_update", unit,
                        acp_value, rpc_value, 1.1 if name == "CPU per chunk" else None))  # #20: within 10 %
    return rows


def main() -> None:
    common.runs_and_chunks_main(__doc__, results, "the mode compared against")


if __name__ == "__main__":
    main()
