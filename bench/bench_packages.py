"""Packages at start-up: time from spawning `pi --mode rpc --no-session` to its `get_commands` answer.

Three situations, each the median of N fresh processes per side (ours and the reference pi 1.6.0
take turns, one agent dir shared by both, set up once):

* no package: an empty agent dir;
* 5 resource packages: five local packages in settings.json, each with a skill and two prompt templates;
* one TS extension: one local package whose extension is TypeScript (``extensions/ext.ts``, a
  command); ours starts its Node.js sidecar and loads the file with jiti, pi loads it in-process.

The get_commands answer must list what the packages bring, so a side that skipped them fails the run.

Also the cost of a TypeScript ``message_update`` handler per streamed delta: the wall time of a
2,000- and a 5,000-delta prompt (``bench_streaming``'s fake server and script) with the handler, minus
without it, per delta, and the CPU time added (the process and its children: our Node.js sidecar
counts). Ours posts each event to the sidecar without waiting for its answer, the message once and
then each delta alone; pi calls the handler in-process.

And the CPU per delta of a TypeScript extension's own ``ctx.modelRegistry.streamSimple`` loop (a
command iterating a 20,000-delta request, minus a 1-delta one): ours runs the request and writes its
events to the sidecar, the events of one event-loop pass in one write; pi runs it in-process.
Run by hand: `.venv/bin/python bench/bench_packages.py [--runs N] [--deltas-only | --stream-simple]` (no target: the
sidecar start is the cost of running pi's TypeScript at all).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import common
from common import Row, median, spread

TS_EXTENSION = """export default function (pi: any) {
  pi.registerCommand("bench-ts", { description: "bench", handler: async () => {} });
}
"""


def write_package(root: Path, index: int, typescript: bool) -> None:
    (root / "skills" / f"skill{index}").mkdir(parents=True)
    (root / "skills" / f"skill{index}" / "SKILL.md").write_text(
        f"---\nname: skill{index}\ndescription: Skill {index}\n---\nDo it.\n")
    (root / "prompts").mkdir()
    for name in ("a", "b"):
        (root / "prompts" / f"p{index}{name}.md").write_text(f"---\ndescription: Prompt {index}{name}\n---\nDo $1\n")
    (root / "package.json").write_text(json.dumps({"name": f"bench-pkg-{index}", "version": "1.0.0"}))
    if typescript:
        (root / "extensions").mkdir()
        (root / "extensions" / "ext.ts").write_text(TS_EXTENSION)


def setup(home: Path, situation: str) -> int:
    """The agent dir of a situation; the number of commands its packages bring."""
    agent = home / ".pi" / "agent"
    agent.mkdir(parents=True)
    count = {"no package": 0, "5 resource packages": 5, "one TS extension": 1}[situation]
    packages = []
    for index in range(count):
        root = home / f"pkg{index}"
        write_package(root, index, typescript=situation == "one TS extension")
        packages.append(str(root))
    (agent / "settings.json").write_text(json.dumps({"packages": packages}))
    return count * 3 + (1 if situation == "one TS extension" else 0)


def start_once(cmd: list[str], home: Path, expected: int) -> float:
    """Seconds to the get_commands answer (checked to list ``expected`` non-built-in commands)."""
    start = time.perf_counter()
    env = common.env_for(cmd, home)
    proc = common.spawn([*cmd, "--mode", "rpc", "--no-session"], env, cwd=home)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b'{"id":"c","type":"get_commands"}\n')
    proc.stdin.flush()
    while True:
        line = proc.stdout.readline()
        if not line or b'"id":"c"' in line:
            break
    elapsed = time.perf_counter() - start
    common.stop(proc)
    commands = json.loads(line)["data"]["commands"] if line else []
    found = [c for c in commands if c["sourceInfo"]["source"] != "builtin"]
    if len(found) != expected:
        raise RuntimeError(f"{cmd[0]}: expected {expected} package commands, got {[c['name'] for c in found]}")
    return elapsed


def _shared_runtime() -> None:
    """Our sidecar's jiti and TypeBox from the user's cache, not installed again in each scratch HOME."""
    from pi_coding_agent.coding.extensions.typescript.host import runtime_dir

    os.environ.setdefault("PI_TS_RUNTIME_DIR", str(runtime_dir()))


def results(runs: int) -> list[Row]:
    _shared_runtime()
    ref = common.reference_cmd()
    cmds = [common.ours_cmd()] if ref is None else [common.ours_cmd(), ref]
    rows = []
    for situation in ("no package", "5 resource packages", "one TS extension"):
        home = common.scratch_home()
        expected = setup(home, situation)
        for cmd in cmds:
            start_once(cmd, home, expected)  # warms the caches (and installs our sidecar runtime once)
        times: list[list[float]] = [[] for _ in cmds]
        for _ in range(runs):
            for cmd, out in zip(cmds, times, strict=True):
                out.append(start_once(cmd, home, expected))
        common.cleanup(home)
        ours_t, ref_t = times[0], times[1] if len(times) > 1 else None
        name = f"{situation}: to get_commands (spread ours {spread(ours_t)}" + (
            f", ref {spread(ref_t)})" if ref_t else ")")
        rows.append(Row("packages", name, "ms", median(ours_t) * 1000,
                        None if ref_t is None else median(ref_t) * 1000))
    return rows


HANDLER_TS = 'export default function (pi: any) { let n = 0; pi.on("message_update", () => { n++; }); }\n'
DELTAS = (2000, 5000)


def per_delta_rows(runs: int) -> list[Row]:
    """Wall time and CPU per delta that a TypeScript ``message_update`` handler adds, each side, for each
    reply length (a cost that grows with the reply shows as a larger number for the longer one)."""
    return [row for deltas in DELTAS for row in _per_delta(runs, deltas)]


def _per_delta(runs: int, deltas: int) -> list[Row]:
    from bench_streaming import run_once, scripted_reply

    home = common.scratch_home()
    handler = home / "handler.ts"
    handler.write_text(HANDLER_TS)
    reply = scripted_reply(deltas)
    ref = common.reference_cmd()
    sides = [common.ours_cmd()] if ref is None else [common.ours_cmd(), ref]
    wall: list[list[float]] = [[] for _ in sides]
    cpu: list[list[float]] = [[] for _ in sides]
    for _ in range(runs):
        for cmd, wall_out, cpu_out in zip(sides, wall, cpu, strict=True):
            plain, handled = run_once(cmd, reply), run_once(cmd, reply, ("-e", str(handler)))
            wall_out.append((handled.wall_s - plain.wall_s) / deltas * 1e6)
            cpu_out.append((handled.cpu_s - plain.cpu_s) / deltas * 1e6)
    common.cleanup(home)
    return [Row("packages", f"TS message_update handler, {deltas} deltas: {what} added per delta", "us",
                median(values[0]), median(values[1]) if len(values) > 1 else None)
            for what, values in (("wall time", wall), ("CPU (process tree)", cpu))]


STREAM_TS = f"""export default function (pi: any) {{
  pi.registerCommand("stream", {{ description: "bench", handler: async (_args: string, ctx: any) => {{
    const model = ctx.modelRegistry.find("{common.PROVIDER}", "{common.MODEL}");
    const stream = ctx.modelRegistry.streamSimple(model, {{ messages: [{{ role: "user", content: "go", timestamp: 1 }}] }});
    let text = "";
    for await (const event of stream) if (event.type === "text_delta") text += event.delta;
    ctx.ui.notify(`streamed ${{text.length}}`);
  }} }});
}}
"""
STREAM_DELTAS = 20_000


def stream_simple_rows(runs: int) -> list[Row]:
    """CPU per delta of a TypeScript ``ctx.modelRegistry.streamSimple`` loop (the process tree: our
    sidecar counts): a 20,000-delta request minus a 1-delta one, each side."""
    from bench_streaming import scripted_reply

    _shared_runtime()
    ref = common.reference_cmd()
    sides = [common.ours_cmd()] if ref is None else [common.ours_cmd(), ref]
    long, short = scripted_reply(STREAM_DELTAS), scripted_reply(1)
    cpu: list[list[float]] = [[] for _ in sides]
    for _ in range(runs):
        for cmd, out in zip(sides, cpu, strict=True):
            out.append((_stream_once(cmd, long) - _stream_once(cmd, short)) / (STREAM_DELTAS - 1) * 1e6)
    return [Row("packages", f"TS streamSimple loop, {STREAM_DELTAS} deltas: CPU (process tree) per delta", "us",
                median(cpu[0]), median(cpu[1]) if len(cpu) > 1 else None)]


def _stream_once(cmd: list[str], reply: dict[str, object]) -> float:
    """CPU seconds from sending ``/stream`` to its notification (its text length checked)."""
    from bench_streaming import read_until, start_server

    home = common.scratch_home()
    (home / "stream.ts").write_text(STREAM_TS)
    (home / "script.json").write_text(json.dumps([reply]))
    server, url = start_server(home / "script.json")
    common.write_models_json(home / "agent", url)
    proc = common.spawn([*cmd, "--mode", "rpc", "--no-session", "-e", str(home / "stream.ts")],
                        common.env_for(cmd, home, home / "agent"), cwd=home)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(b'{"id":"s","type":"get_state"}\n')
        proc.stdin.flush()
        read_until(proc.stdout.fileno(), b'"get_state"', bytearray())
        before = common.tree_cpu_seconds(proc.pid)
        proc.stdin.write(b'{"id":"p","type":"prompt","message":"/stream"}\n')
        proc.stdin.flush()
        output = bytearray()
        read_until(proc.stdout.fileno(), b"streamed ", output)
        used = common.tree_cpu_seconds(proc.pid) - before
    finally:
        common.stop(proc)
        server.kill()
        server.wait()
        common.cleanup(home)
    length = sum(len(block["text"]) for block in reply["content"])  # type: ignore[attr-defined]
    if f"streamed {length}".encode() not in output:
        raise RuntimeError(f"{cmd[0]}: the streamed text differs from the script: {bytes(output[-300:])!r}")
    return used


async def measured(runs: int) -> list[Row]:
    return results(runs) + per_delta_rows(max(1, runs // 2)) + stream_simple_rows(max(1, runs // 2))


async def deltas_only(runs: int) -> list[Row]:
    return per_delta_rows(runs) + stream_simple_rows(runs)


async def stream_simple_only(runs: int) -> list[Row]:
    return stream_simple_rows(runs)


if __name__ == "__main__":
    import sys

    if "--deltas-only" in sys.argv:  # the per-delta rows alone, ``--runs`` of them
        sys.argv.remove("--deltas-only")
        common.run_bench(__doc__, deltas_only, default_runs=5)
    elif "--stream-simple" in sys.argv:  # the streamSimple row alone
        sys.argv.remove("--stream-simple")
        common.run_bench(__doc__, stream_simple_only, default_runs=5)
    else:
        common.run_bench(__doc__, measured, default_runs=10)
