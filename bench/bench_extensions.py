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

import common

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "extensions" / "gateway_provider.py"
sys.path.insert(0, str(ROOT))
from tests.coding.extensions.test_extensions_fidelity import GATEWAY_TS  # noqa: E402  (the example's TypeScript twin)

GATEWAY_ENV = {"GATEWAY_URL": "http://127.0.0.1:9/v1", "GATEWAY_KEY": "bench"}
SELECT = ["--provider", "gateway", "--model", "team-model"]


def _extension(cmd: list[str], home: Path) -> Path:
    if cmd == common.ours_cmd():
        return EXAMPLE
    path = home / "gateway.ts"
    path.write_text(GATEWAY_TS)
    return path


def to_get_state(cmd: list[str], home: Path) -> float:
    start = time.perf_counter()
    proc = common.spawn([*cmd, "--mode", "rpc", "--no-session", "-e", str(_extension(cmd, home)), *SELECT],
                        {**common.env_for(cmd, home, home / "agent"), **GATEWAY_ENV}, cwd=home)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b'{"id":"s","type":"get_state"}\n')
    proc.stdin.flush()
    line = proc.stdout.readline()
    elapsed = time.perf_counter() - start
    common.stop(proc)
    if b'"team-model"' not in line:
        raise RuntimeError(f"{cmd[0]}: get_state did not select the extension's model: {line[:300]!r}")
    return elapsed


def list_models(cmd: list[str], home: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run([*cmd, "--list-models", "-e", str(_extension(cmd, home))], cwd=home, capture_output=True,
                          env={**common.env_for(cmd, home, home / "agent"), **GATEWAY_ENV}, timeout=120, check=False)
    elapsed = time.perf_counter() - start
    if b"team-model" not in done.stdout:
        raise RuntimeError(f"{cmd[0]}: --list-models did not list the extension's model: {done.stderr[:300]!r}")
    return elapsed


def results(runs: int = 5) -> list[common.Row]:
    """One row per measure: the median over ``runs`` of each side, the sides taking turns."""
    ref = common.reference_cmd()
    cmds = [common.ours_cmd()] if ref is None else [common.ours_cmd(), ref]
    rows = []
    for name, measure in (("extension provider: to get_state", to_get_state),
                          ("extension provider: --list-models", list_models)):
        homes = {tuple(cmd): common.scratch_home() for cmd in cmds}
        for home in homes.values():
            (home / "agent").mkdir()
        times: dict[tuple[str, ...], list[float]] = {side: [] for side in homes}
        for _ in range(runs):
            for side, home in homes.items():
                times[side].append(measure(list(side), home))
        medians = [common.median(values) * 1000 for values in times.values()]
        for home in homes.values():
            common.cleanup(home)
        rows.append(common.Row("extensions", name, "ms", medians[0], medians[1] if len(medians) > 1 else None))
    return rows


if __name__ == "__main__":
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    compiled = common.compile_bytecode()
    print(common.format_table(results(count)), f"median of {count} runs per cell; {compiled}", sep="\n")
