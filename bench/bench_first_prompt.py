"""First prompt of a process: from writing ``prompt`` to reading its first ``message_update``.

A fresh ``pi --mode rpc --no-session`` per run, its models.json routing provider ``bench`` to the
fake LLM server (``tests/support/fakes/llm_server.py``, OpenAI chat-completions wire) over ``http://`` or
``https://`` (a throw-away CA made with the ``openssl`` command; our side trusts it through
``SSL_CERT_FILE``, the reference through ``NODE_EXTRA_CA_CERTS``). After the ``get_state`` answer
the client waits ``--pause`` seconds (a user typing; 0 = a client that prompts at once), then writes
the prompt. Ours and the reference take turns run after run. Reports median and spread (min-max).

Usage: .venv/bin/python bench/bench_first_prompt.py [--runs 7] [--pause 0.5]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import common
from bench_streaming import read_until
from common import ROOT, Row, median, spread

sys.path.insert(0, str(ROOT))
from tests.support.fakes.tls_proxy import make_certificates

REPLY = {"content": [{"type": "text", "text": "first words of a reply"}], "chunkSize": 4}
TARGET = 0.5  # ours/reference, issue #20


def start_server(runs: int, tls: tuple[Path, Path] | None, scratch: Path) -> tuple[subprocess.Popen[bytes], str]:
    """One fake server for every run of a scheme (each agent process opens its own connection); its
    script is written into ``scratch``, which the caller removes."""
    script = scratch / "script.json"
    script.write_text(json.dumps([REPLY] * (4 * runs + 4)))
    extra = ["--tls", str(tls[0]), str(tls[1])] if tls else []
    server = subprocess.Popen([sys.executable, "-m", "tests.support.fakes.llm_server", "--script", str(script), *extra],
                              cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert server.stdout is not None
    return server, server.stdout.readline().decode().strip()


def first_prompt_s(cmd: list[str], url: str, ca: Path | None, pause_s: float) -> float:
    """Seconds from writing ``prompt`` to reading the first ``message_update`` of a fresh process."""
    home = common.scratch_home()
    common.write_models_json(home / "agent", url)
    env = common.env_for(cmd, home, home / "agent")
    if ca is not None:
        env.update(SSL_CERT_FILE=str(ca), NODE_EXTRA_CA_CERTS=str(ca))
    proc = common.answered_rpc(cmd, env, home)
    assert proc.stdin is not None and proc.stdout is not None
    fd = proc.stdout.fileno()
    try:
        time.sleep(pause_s)
        output = bytearray()
        started = time.perf_counter()
        proc.stdin.write(b'{"id":"p","type":"prompt","message":"hello"}\n')
        proc.stdin.flush()
        read_until(fd, b'"message_update"', output)
        elapsed = time.perf_counter() - started
        read_until(fd, b'"agent_settled"', output)
    finally:
        common.stop(proc)
        common.cleanup(home)
    if b'"errorMessage"' in output:
        raise RuntimeError(f"{cmd[0]}: the prompt failed: {bytes(output)[-400:]!r}")
    return elapsed


def measure(scheme: str, runs: int, pause_s: float) -> tuple[list[float], list[float] | None]:
    """Per-run seconds for ours and the reference (None when not installed), taking turns."""
    certs = Path(tempfile.mkdtemp(prefix="pi-bench-tls-"))
    ca = tls = None
    if scheme == "https":
        ca, leaf, key = make_certificates(certs, "127.0.0.1")
        tls = (leaf, key)
    server, url = start_server(runs, tls, certs)
    ref = common.reference_cmd()
    ours_s: list[float] = []
    ref_s: list[float] = []
    try:
        for _ in range(runs):
            ours_s.append(first_prompt_s(common.ours_cmd(), url, ca, pause_s))
            if ref is not None:
                ref_s.append(first_prompt_s(ref, url, ca, pause_s))
    finally:
        server.kill()
        server.wait()
        common.cleanup(certs)
    return ours_s, ref_s if ref is not None else None


def results(runs: int = 7, pause_s: float = 0.5) -> list[Row]:
    rows = []
    for scheme in ("http", "https"):
        ours_s, ref_s = measure(scheme, runs, pause_s)
        measure_name = f"{scheme}: prompt to first message_update (spread ours {spread(ours_s)}" + (
            f", ref {spread(ref_s)})" if ref_s else ")")
        rows.append(Row("first prompt", measure_name, "ms", median(ours_s) * 1000,
                        median(ref_s) * 1000 if ref_s else None, TARGET))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--pause", type=float, default=0.5, help="seconds between get_state and prompt")
    args = parser.parse_args()
    note = common.compile_bytecode()
    print(common.format_table(results(args.runs, args.pause)))
    print(f"median of {args.runs} runs per cell, prompt {args.pause} s after get_state; {note}")


if __name__ == "__main__":
    main()
