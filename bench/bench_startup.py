"""Start-up: time from spawning `pi --mode rpc --no-session` to the response of its first `get_state`.

Three situations, each the median of N fresh processes per side (ours and the reference pi 1.6.0
take turns):

* bare: no agent dir content (what a first install sees);
* models.json: a custom provider in models.json, selected with --provider/--model; our side validated
  this file in an earlier (unmeasured) start, so its fingerprint cache is warm - the everyday case;
* models.json changed: a fresh agent dir every run, so ours validates the file (imports pydantic).

Each time row names the spread (min-max) of its runs. Also the idle RSS (VmHWM 0.2 s after the
answer) of the bare and models.json starts (with models.json our side has credentials, so it warms
the HTTP stack in that window); where valgrind is installed, the instructions of one bare and one
models.json start of ours (callgrind, from exec to exit after the get_state answer: the one start-up
measure the machine's load does not move), with ``python -c "import asyncio"`` in the measure's
name as the floor; and, ours only, the
models.json start with two stdio MCP servers configured (the FastMCP fake of tests/support/fakes, connecting
in the background) and with an extension loaded (``-e`` the permission-gate example), each against
our plain models.json start: issue #20 wants them within 10 %.
Run by hand: `.venv/bin/python bench/bench_startup.py [runs]` (targets of #20: start-up <= 0.3 x the
reference and <= 60 ms, idle RSS <= 20 MiB).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from common import (
    MODEL,
    PROVIDER,
    ROOT,
    Row,
    cleanup,
    compile_bytecode,
    env_for,
    format_table,
    median,
    ours_cmd,
    peak_rss_mb,
    reference_cmd,
    scratch_home,
    spawn,
    spread,
    stop,
    write_models_json,
)

UNUSED_URL = "http://127.0.0.1:9"  # get_state never calls the provider
SITUATIONS = ("bare", "models.json", "models.json changed")
MCP_SERVER = {"command": sys.executable, "args": ["-m", "tests.support.fakes.mcp_server", "stdio"], "cwd": str(ROOT)}
EXTENSION = ROOT / "src" / "pi_coding_agent" / "coding" / "extensions" / "examples" / "permission_gate.py"
# ours only, each against our models.json start: (situation, extra arguments, mcp.json servers)
WITH_FEATURES = (("2 stdio MCP servers", (), 2), ("an extension (-e)", ("-e", str(EXTENSION)), 0))
FEATURE_LIMIT = 1.1  # issue #20: within 10 % of the bare case


def start_once(cmd: list[str], home: Path, agent_dir: Path | None, extra: tuple[str, ...] = ()) -> tuple[float, float]:
    """Seconds to the first get_state answer, and VmHWM (MB) once idle."""
    args = ["--mode", "rpc", "--no-session", *extra]
    if agent_dir is not None:
        args += ["--provider", PROVIDER, "--model", MODEL]
    start = time.perf_counter()
    proc = spawn([*cmd, *args], env_for(cmd, home, agent_dir), cwd=home)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b'{"id":"s","type":"get_state"}\n')
    proc.stdin.flush()
    line = proc.stdout.readline()
    elapsed = time.perf_counter() - start
    if b'"success":true' not in line:
        raise RuntimeError(f"{cmd[0]}: get_state failed: {line[:300]!r}")
    time.sleep(0.2)
    rss = peak_rss_mb(proc.pid)
    stop(proc)
    return elapsed, rss


def measure(cmds: list[list[str]], runs: int, situation: str) -> list[tuple[list[float], float]]:
    """Start-up times (s) and the median idle RSS (MB) per command over ``runs`` starts in one situation.

    The commands take turns run after run, so a change of machine load hits every side alike.
    """
    homes = [scratch_home() for _ in cmds]
    samples: list[list[tuple[float, float]]] = [[] for _ in cmds]
    if situation == "models.json":
        for cmd, home in zip(cmds, homes, strict=True):
            write_models_json(home / "agent", UNUSED_URL)
            start_once(cmd, home, home / "agent")  # fills our validation cache; not measured
    for run in range(runs):
        for cmd, home, out in zip(cmds, homes, samples, strict=True):
            agent_dir: Path | None = None
            if situation == "models.json":
                agent_dir = home / "agent"
            elif situation == "models.json changed":
                agent_dir = home / f"agent-{run}"
                write_models_json(agent_dir, UNUSED_URL)
            out.append(start_once(cmd, home, agent_dir))
    for home in homes:
        cleanup(home)
    return [([t for t, _ in out], median([r for _, r in out])) for out in samples]


def results(runs: int = 10) -> list[Row]:
    ref = reference_cmd()
    cmds = [ours_cmd()] if ref is None else [ours_cmd(), ref]
    rows = []
    for situation in SITUATIONS:
        measured = measure(cmds, runs, situation)
        ours_t, ours_rss = measured[0]
        ref_t, ref_rss = measured[1] if len(measured) > 1 else (None, None)
        changed = situation == "models.json changed"  # a one-off after each edit: no target
        name = f"{situation}: to get_state (spread ours {spread(ours_t)}" + (f", ref {spread(ref_t)})" if ref_t else ")")
        rows.append(Row("start-up", name, "ms", median(ours_t) * 1000, None if ref_t is None else median(ref_t) * 1000,
                        None if changed else 0.3, None if changed else 60))
        if not changed:
            rows.append(Row("start-up", f"{situation}: idle RSS", "MiB", ours_rss, ref_rss,
                            limit=20 if situation == "bare" else None))
    return rows + instruction_rows() + feature_rows(runs)


def callgrind(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, bytes]:
    """Millions of instructions ``argv`` runs from exec to exit with one get_state on stdin, and its stdout."""
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv],
                          input=b'{"id":"s","type":"get_state"}\n', capture_output=True, env=env, cwd=cwd,
                          timeout=600, check=False)
    found = re.search(rb"Collected : (\d+)", done.stderr)
    if found is None:
        raise RuntimeError(f"valgrind: no instruction count: {done.stderr[-300:]!r}")
    return int(found.group(1)) / 1e6, done.stdout


def instruction_rows() -> list[Row]:
    """Our bare and models.json starts in instructions (callgrind), the floor (``import asyncio``) in
    the name; none without valgrind."""
    if shutil.which("valgrind") is None:
        return []
    home = scratch_home()
    floor, _ = callgrind([sys.executable, "-c", "import asyncio"], env_for([], home), home)
    write_models_json(home / "agent", UNUSED_URL)
    cmd = ours_cmd()
    start_once(cmd, home, home / "agent")  # fills the validation cache, as in the models.json situation
    rows = []
    for situation, agent_dir in (("bare", None), ("models.json", home / "agent")):
        args = ["--mode", "rpc", "--no-session"] + (["--provider", PROVIDER, "--model", MODEL] if agent_dir else [])
        count, out = callgrind([*cmd, *args], env_for(cmd, home, agent_dir), home)
        if b'"success":true' not in out:
            raise RuntimeError(f"{cmd[0]}: get_state failed under valgrind: {out[:300]!r}")
        rows.append(Row("start-up", f"{situation}: instructions to exit (floor: import asyncio {floor:.0f} M)",
                        "M", count))
    cleanup(home)
    return rows


def feature_rows(runs: int) -> list[Row]:
    """Our models.json start with MCP servers or an extension, against the same start without them."""
    plain = scratch_home()
    write_models_json(plain / "agent", UNUSED_URL)
    homes = []
    for _, _, servers in WITH_FEATURES:
        home = scratch_home()
        write_models_json(home / "agent", UNUSED_URL)
        if servers:
            names = ["one", "two"][:servers]
            (home / "agent" / "mcp.json").write_text(json.dumps({"mcpServers": {n: MCP_SERVER for n in names}}))
        homes.append(home)
    cmd = ours_cmd()
    for home in [plain, *homes]:
        start_once(cmd, home, home / "agent")  # validates models.json once per agent dir; not measured
    base: list[float] = []
    timed: list[list[float]] = [[] for _ in WITH_FEATURES]
    for _ in range(runs):
        base.append(start_once(cmd, plain, plain / "agent")[0])
        for (_, extra, _), home, out in zip(WITH_FEATURES, homes, timed, strict=True):
            out.append(start_once(cmd, home, home / "agent", extra)[0])
    for home in [plain, *homes]:
        cleanup(home)
    return [Row("start-up (ours)", f"models.json + {name} vs without: to get_state", "ms", median(out) * 1000,
                median(base) * 1000, FEATURE_LIMIT) for (name, _, _), out in zip(WITH_FEATURES, timed, strict=True)]


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    note = compile_bytecode()
    print(format_table(results(runs)))
    print(f"median of {runs} starts per cell; {note}")


if __name__ == "__main__":
    main()
