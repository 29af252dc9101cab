"""Extension start-up: time to the first `get_state` answer with an extension that registers a
provider and selects it (`-e gateway_provider --provider gateway --model team-model`), and the time of
`pi --list-models` with that extension (which loads it, as pi does), ours beside the reference pi 1.6.0
(the same extension in TypeScript). Medians of N runs, sides taking turns.
Run by hand: `.venv/bin/python bench/bench_extensions.py [runs]`.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from common import (
    Row,
    cleanup,
    compile_bytecode,
    env_for,
    format_table,
    median,
    ours_cmd,
    reference_cmd,
    scratch_home,
    spawn,
    stop,
)

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "extensions" / "gateway_provider.py"
sys.path.insert(0, str(ROOT))
from tests.test_extensions_fidelity import GATEWAY_TS  # noqa: E402  (the example's TypeScript twin)

GATEWAY_ENV = {"GATEWAY_URL": "http://127.0.0.1:9/v1", "GATEWAY_KEY": "bench"}
SELECT = ["--provider", "gateway", "--model", "team-model"]


def _extension(cmd: list[str], home: Path) -> Path:
    if cmd == ours_cmd():
        return EXAMPLE
    path = home / "gateway.ts"
    path.write_text(GATEWAY_TS)
    return path


def to_get_state(cmd: list[str], home: Path) -> float:
    start = time.perf_counter()
    proc = spawn([*cmd, "--mode", "rpc", "--no-session", "-e", str(_extension(cmd, home)), *SELECT],
                 {**env_for(cmd, home, home / "agent"), **GATEWAY_ENV}, cwd=home)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b'{"id":"s","type":"get_state"}\n')
    proc.stdin.flush()
    line = proc.stdout.readline()
    elapsed = time.perf_counter() - start
    stop(proc)
    if b'"team-model"' not in line:
        raise RuntimeError(f"{cmd[0]}: get_state did not select the extension's model: {line[:300]!r}")
    return elapsed


def list_models(cmd: list[str], home: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run([*cmd, "--list-models", "-e", str(_extension(cmd, home))], cwd=home, capture_output=True,
                          env={**env_for(cmd, home, home / "agent"), **GATEWAY_ENV}, timeout=120, check=False)
    elapsed = time.perf_counter() - start
    if b"team-model" not in done.stdout:
        raise RuntimeError(f"{cmd[0]}: --list-models did not list the extension's model: {done.stderr[:300]!r}")
    return elapsed


def results(runs: int = 5) -> list[Row]:
    ref = reference_cmd()
    cmds = [ours_cmd()] if ref is None else [ours_cmd(), ref]
    rows = []
    for name, measure in (("extension provider: to get_state", to_get_state),
                          ("extension provider: --list-models", list_models)):
        homes = [scratch_home() for _ in cmds]
        for home in homes:
            (home / "agent").mkdir()
        samples: list[list[float]] = [[] for _ in cmds]
        for _ in range(runs):
            for cmd, home, out in zip(cmds, homes, samples, strict=True):
                out.append(measure(cmd, home))
        for home in homes:
            cleanup(home)
        rows.append(Row("extensions", name, "ms", median(samples[0]) * 1000,
                        median(samples[1]) * 1000 if len(samples) > 1 else None))
    return rows


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    note = compile_bytecode()
    print(format_table(results(runs)))
    print(f"median of {runs} runs per cell; {note}")


if __name__ == "__main__":
    main()
