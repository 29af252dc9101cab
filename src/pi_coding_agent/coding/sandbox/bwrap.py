"""``bash`` under bubblewrap: the kernel's namespaces enforce the sandbox policy on every process.

bubblewrap (Debian's ``bubblewrap``) is chosen over Landlock + seccomp because it works unprivileged
wherever user namespaces do (most containers and CI runners), needs no code of ours near syscalls,
and gives the two things Landlock cannot: a private PID namespace (the command cannot see this
process's ``/proc/<pid>/environ``, and nothing it starts, ``setsid`` or double fork included,
survives it) and a network namespace with nothing in it. The whole host file system is mounted
read-only; the writable roots (in ``read-only`` mode, a private scratch dir) are bound read-write on top.
"""

from __future__ import annotations

import shutil
import subprocess
from functools import cache

from .policy import SandboxPolicy

# What a command printed when the sandbox, not the command, refused something.
REFUSAL_MARKERS = ("Read-only file system", "Network is unreachable")


_PROTECTIONS = {
    "read-only": lambda path: ["--ro-bind", path, path],
    "pinned": lambda path: ["--bind", path, path],
    "empty": lambda path: ["--tmpfs", path, "--remount-ro", path],
}


class SandboxUnavailable(Exception):
    """A sandboxed mode was asked for and this machine cannot provide it."""


def wrap_command(policy: SandboxPolicy, argv: list[str], cwd: str) -> list[str]:
    """``argv`` run inside the sandbox ``policy`` describes."""
    wrapped = [_bwrap_path(), "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
               "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    if not policy.network:
        wrapped.append("--unshare-net")
    if policy.mode == "read-only":
        scratch = str(policy.scratch_dir())
        wrapped += ["--bind", scratch, scratch, "--setenv", "TMPDIR", scratch]
    for root in policy.writable():
        wrapped += ["--bind", str(root), str(root)]
    for path, how in policy.protected_paths():  # on top of the writable binds
        # a missing one becomes an empty read-only tmpfs (its mount point, an empty folder, stays behind)
        wrapped += _PROTECTIONS[how](str(path))
    return [*wrapped, "--chdir", cwd, "--", *argv]


def ensure_available() -> None:
    """Raise :class:`SandboxUnavailable` saying what is missing, so the agent never runs unsandboxed."""
    problem = _probe()
    if problem is not None:
        raise SandboxUnavailable(problem)


@cache
def _bwrap_path() -> str:
    return shutil.which("bwrap") or "bwrap"


@cache
def _probe() -> str | None:
    if shutil.which("bwrap") is None:
        return ("the sandbox needs bubblewrap (`bwrap`), which is not installed "
                "(Debian/Ubuntu: apt-get install bubblewrap); use --sandbox off to run without it")
    try:
        argv = wrap_command(SandboxPolicy(mode="workspace-write"), ["true"], "/")
        done = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"bubblewrap could not start a sandbox: {exc}"
    if done.returncode != 0:
        first = (done.stderr.strip().splitlines() or ["unknown error"])[0]
        return f"bubblewrap could not create a sandbox here ({first}); user namespaces may be disabled"
    return None
