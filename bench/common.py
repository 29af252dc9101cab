"""Shared helpers for the hand-run benchmarks: locating the reference pi, spawning, measuring."""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REFERENCE_ROOT = Path(os.environ.get("PI_REFERENCE_DIR", Path.home() / ".cache" / "pi-reference"))
REFERENCE_PI = REFERENCE_ROOT / "pi-1.6.0" / "node_modules" / ".bin" / "pi"
REFERENCE_NODE_BIN = REFERENCE_ROOT / "node22" / "node_modules" / ".bin"


def ours_cmd() -> list[str]:
    """Our `pi`, from the same environment as this interpreter."""
    exe = Path(sys.executable).with_name("pi")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "pi_coding_agent"]


def reference_cmd() -> list[str] | None:
    """The reference pi 1.6.0 (installed by ../shared/tools/reference-pi.sh), or None."""
    if not REFERENCE_PI.exists():
        return None
    return [str(REFERENCE_PI)]


def env_for(cmd: list[str], home: Path, agent_dir: Path | None = None) -> dict[str, str]:
    env = dict(os.environ, HOME=str(home))
    env["PATH"] = f"{REFERENCE_NODE_BIN}:{env.get('PATH', '')}"
    if agent_dir is not None:
        env["PI_CODING_AGENT_DIR"] = str(agent_dir)
    return env


def scratch_home() -> Path:
    return Path(tempfile.mkdtemp(prefix="pi-bench-"))


def median(values: list[float]) -> float:
    return statistics.median(values)


def peak_rss_mb(pid: int) -> float:
    """VmHWM of a live process (Linux), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_seconds(pid: int) -> float:
    """User+system CPU time of a live process (Linux), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def cleanup(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


def spawn(cmd: list[str], env: dict[str, str], cwd: Path | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env=env, cwd=cwd)
