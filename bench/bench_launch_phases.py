"""Instructions of an interactive start, phase by phase, to its first frame (callgrind).

``pi`` (a source tree's, ``--src``) starts in a 120x40 tmux pane of a scratch home whose models.json
names the bench model, under ``valgrind --tool=callgrind --dump-before=getppid``; a small driver
calls ``os.getppid()`` at each phase's end, so callgrind writes one profile part per phase, and
exits the process (``os._exit``) once the app's ``when_ready`` callbacks run, after the first
frame. The phases: the interpreter to the driver, asyncio (without ``ssl``, as the CLI imports it),
the CLI, the ``textual`` package, ``textual.app``, building the session (``open_session``), building
the app (``build_app``: our UI modules, the driver, the widgets), and Textual's start to the first
frame (its CSS, compose, layout, paint). An unmeasured start comes first (as on a user's second
launch, models.json has been validated and its fingerprint cached). Instruction counts do not move with the machine's load;
wall and CPU time of a loaded machine do. ``PYTHONHASHSEED`` is fixed, so two runs of one tree
agree to a few hundred thousand instructions.

Usage: .venv/bin/python bench/bench_launch_phases.py [--src DIR/src ...]
"""

from __future__ import annotations

import argparse
import compileall
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import common

DRIVER = r'''
import os, sys
def mark(): os.getppid()
def main():
    mark()
    from pi_coding_agent.coding.modes.start_up import collector_paused, defer_module, import_asyncio_without_ssl
    defer_module("inspect")
    with collector_paused():
        import_asyncio_without_ssl()
    mark()
    from pi_coding_agent.coding.modes.interactive import launch
    import pi_coding_agent.coding.cli.main
    mark()
    launch._set_screen_fps()
    mark()
    import textual.app
    mark()
    opened, built = launch.open_session, launch.build_app
    async def open_session(*a, **k):
        mark()
        session = await opened(*a, **k)
        mark()
        return session
    def build_app(*a, **k):
        app = built(*a, **k)
        mark()
        app.when_ready.append(lambda: (mark(), os._exit(0)))
        return app
    launch.open_session, launch.build_app = open_session, build_app
    return pi_coding_agent.coding.cli.main.main()
sys.exit(main())
'''
PHASES = ("interpreter", "asyncio", "CLI", "textual package", "textual.app", "(imports before the session)",
          "session", "app", "Textual start to first frame")


def phases(src: Path, home: Path) -> list[int]:
    """Instructions per phase of one start of ``src``'s pi."""
    out = home / "callgrind"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    driver = home / "driver.py"
    driver.write_text(DRIVER)
    env = {"HOME": str(home), "PI_OFFLINE": "1", "PI_SKIP_VERSION_CHECK": "1", "PYTHONHASHSEED": "0",
           "PI_CODING_AGENT_DIR": str(home / "agent"), "TERM": "xterm-256color", "PYTHONPATH": str(src)}
    line = " ".join(["env", "-u", "PYTHONDONTWRITEBYTECODE", *(f"{k}={shlex.quote(v)}" for k, v in env.items()),
                     "valgrind", "--tool=callgrind", "--dump-before=getppid", f"--callgrind-out-file={out}/cg",
                     sys.executable, str(driver), "--no-session", "--provider", common.PROVIDER,
                     "--model", common.MODEL, "2>/dev/null", f"; touch {out}/done"])
    socket = f"pi-phases-{uuid.uuid4().hex[:8]}"
    tmux = ["tmux", "-L", socket, "-f", "/dev/null"]
    subprocess.run([*tmux, "new-session", "-d", "-s", "p", "-x", "120", "-y", "40", "-c", str(home), line], check=True)
    try:
        deadline = time.monotonic() + 600
        while not (out / "done").exists():
            if time.monotonic() > deadline:
                raise RuntimeError("the start never reached its first frame")
            time.sleep(0.2)
    finally:
        subprocess.run([*tmux, "kill-server"], check=False, capture_output=True)
    parts = sorted((p for p in out.iterdir() if p.name.startswith("cg.")), key=lambda p: int(p.name.split(".")[1]))
    return [_summary(p) for p in parts][:len(PHASES)]


def _summary(path: Path) -> int:
    for line in path.read_text().splitlines():
        if line.startswith("summary:"):
            return int(line.split()[1])
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--src", action="append", type=Path, help="a source tree's src directory (default: ours)")
    options = parser.parse_args()
    if shutil.which("valgrind") is None or shutil.which("tmux") is None:
        sys.exit("valgrind and tmux are needed")
    print(common.compile_bytecode())
    home = Path(tempfile.mkdtemp(prefix="pi-phases-"))
    common.write_models_json(home / "agent", "http://127.0.0.1:9")  # never contacted before the first frame
    trees = options.src or [common.ROOT / "src"]
    for tree in trees:  # ours was compiled by compile_bytecode
        if tree.resolve() != (common.ROOT / "src").resolve():
            compileall.compile_dir(tree, quiet=1)
    phases(trees[0], home)  # a user's second launch: models.json validated and its fingerprint cached
    counts = {str(tree): phases(tree, home) for tree in trees}
    width = max(len(name) for name in PHASES)
    print(f"{'phase (M instructions)':<{width}}  " + "  ".join(f"{t[-30:]:>30}" for t in counts))
    for i, name in enumerate(PHASES):
        print(f"{name:<{width}}  " + "  ".join(f"{c[i] / 1e6:30.1f}" if i < len(c) else " " * 30 for c in counts.values()))
    print(f"{'total':<{width}}  " + "  ".join(f"{sum(c) / 1e6:30.1f}" for c in counts.values()))
    shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
