"""Running shell commands: shell choice, environment, process groups, and waiting without hanging.

Each command runs in its own session (hence its own process group) so abort and timeout can SIGKILL
the whole tree at once, and so the session's shutdown can kill whatever is still tracked (``env.processes``).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from collections.abc import Callable
from typing import BinaryIO

from pi_coding_agent.ai.abort import AbortSignal

from .backend import ShellExit
from .base import ToolEnv
from .process_groups import MARKER_VARIABLE, ProcessRegistry, kill_command

SESSION_ENV_KEYS = ("PI_SESSION_ID", "PI_SESSION_FILE", "PI_PROVIDER", "PI_MODEL", "PI_REASONING_LEVEL")
MAX_TIMEOUT_MS = 2_147_483_647
_EXIT_GRACE_SECONDS = 0.1
_READ_SIZE = 256 * 1024


class ShellError(Exception):
    """A command could not be started (missing shell or working directory)."""


def resolve_shell(shell_path: str | None) -> str:
    """settings ``shellPath``, else /bin/bash, else bash on PATH, else sh."""
    if shell_path:
        if os.path.exists(shell_path):
            return shell_path
        raise ShellError(f"Custom shell path not found: {shell_path}")
    if os.path.exists("/bin/bash"):
        return "/bin/bash"
    import shutil

    return shutil.which("bash") or "sh"


def shell_environment(env: ToolEnv, session_vars: dict[str, str] | None) -> dict[str, str]:
    """pi's environment minus inherited session variables, ``<agentDir>/bin`` first on PATH."""
    out = {k: v for k, v in os.environ.items() if k not in SESSION_ENV_KEYS}
    if env.agent_dir is not None:
        bin_dir = str(env.agent_dir / "bin")
        path = out.get("PATH", "")
        if bin_dir not in path.split(os.pathsep):
            out["PATH"] = os.pathsep.join(p for p in (bin_dir, path) if p)
    if session_vars:
        out.update({k: v for k, v in session_vars.items() if k in SESSION_ENV_KEYS and v})
    return out


def with_prefix(command: str, prefix: str | None) -> str:
    return f"{prefix}\n{command}" if prefix else command


class OutputFile:
    """``$TMPDIR/<prefix>-<16 hex>.log``, created exclusively with mode 0600."""

    def __init__(self, prefix: str, registry: ProcessRegistry) -> None:
        import tempfile

        self.path = os.path.join(tempfile.gettempdir(), f"{prefix}-{os.urandom(8).hex()}.log")
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        self._file: BinaryIO | None = os.fdopen(fd, "wb")
        registry.keep_file(self.path)  # removed at the session's shutdown

    def write(self, data: bytes) -> None:
        if self._file is not None:
            self._file.write(data)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class CommandAborted(Exception):
    pass


async def run_shell(
    command: str,
    env: ToolEnv,
    on_data: Callable[[bytes], None],
    signal: AbortSignal | None,
    timeout: float | None = None,
    session_vars: dict[str, str] | None = None,
    sandboxed: bool = True,
) -> ShellExit:
    """Run ``<shell> -c command`` in the cwd; stream merged stdout/stderr bytes to ``on_data``.

    The command runs inside ``env.sandbox`` when one is active, unless ``sandboxed`` is false (the
    user allowed a refused command to run outside). Raises :class:`CommandAborted` if the signal
    fired. Returns once the shell exited and its
    pipe reached EOF or stayed idle for a short grace (background jobs may keep it open).
    """
    if signal is not None and signal.aborted:
        raise CommandAborted
    shell = resolve_shell(env.shell_path)
    cwd = str(env.cwd)
    if not os.path.exists(cwd):
        raise ShellError(f"Working directory does not exist: {cwd}\nCannot execute bash commands.")
    env.processes.prepare()
    marker = os.urandom(8).hex()
    argv, environment = [shell, "-c", command], shell_environment(env, session_vars)
    if sandboxed and env.sandbox is not None and env.sandbox.active:
        from pi_coding_agent.coding.sandbox.bwrap import wrap_command

        argv, environment = wrap_command(env.sandbox, argv, cwd), env.sandbox.tool_environment(environment)
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        env={**environment, MARKER_VARIABLE: marker},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        close_fds=True,
    )
    env.processes.track(proc.pid, marker)
    finished = False
    try:
        result = await _supervise(proc, marker, on_data, signal, timeout)
        finished = True
        return result
    finally:
        if not finished:
            # Aborted, cancelled or failed: nothing the command started may outlive the call.
            kill_command(proc.pid, marker)
            _reap_later(proc)
        env.processes.untrack(proc.pid)
        if proc.stdout is not None:
            proc.stdout.close()


def _reap_later(proc: subprocess.Popen[bytes], tries: int = 100) -> None:
    """Collect a killed shell without blocking the loop (a zombie would still answer ``kill(pid, 0)``)."""
    if proc.poll() is None and tries > 0:
        asyncio.get_running_loop().call_later(0.01, _reap_later, proc, tries - 1)


async def _supervise(
    proc: subprocess.Popen[bytes],
    marker: str,
    on_data: Callable[[bytes], None],
    signal: AbortSignal | None,
    timeout: float | None,
) -> ShellExit:
    loop = asyncio.get_running_loop()
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    os.set_blocking(fd, False)
    started = time.monotonic()
    exited = loop.create_future()
    activity = asyncio.Event()
    eof = False
    exited_at: float | None = None
    timed_out = False
    shell_exit_before_timeout: float | None = None

    def on_readable() -> None:
        nonlocal eof
        try:
            data = os.read(fd, _READ_SIZE)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            eof = True
            loop.remove_reader(fd)
        else:
            on_data(data)
        activity.set()

    def on_exit() -> bool:
        nonlocal exited_at
        if exited.done():
            return True
        if proc.poll() is None:
            return False
        exited_at = time.monotonic()
        exited.set_result(proc.returncode)
        return True

    def kill() -> None:
        kill_command(proc.pid, marker)

    def on_timeout() -> None:
        nonlocal timed_out, shell_exit_before_timeout
        timed_out = True
        if exited_at is not None:
            shell_exit_before_timeout = exited_at - started
        kill()

    loop.add_reader(fd, on_readable)
    stop_watch = _watch_exit(loop, proc.pid, on_exit)
    timer = loop.call_later(timeout, on_timeout) if timeout is not None else None
    remove_abort = signal.on_abort(kill) if signal is not None else None
    try:
        await exited
        # The shell is gone; drain until EOF, or until the pipe has been idle for the grace period.
        while not eof:
            activity.clear()
            try:
                await asyncio.wait_for(activity.wait(), _EXIT_GRACE_SECONDS)
            except TimeoutError:
                break
    finally:
        loop.remove_reader(fd)
        stop_watch()
        if timer is not None:
            timer.cancel()
        if remove_abort is not None:
            remove_abort()
    if signal is not None and signal.aborted:
        raise CommandAborted
    code = proc.returncode if proc.returncode is not None else 1
    exit_code = 128 - code if code < 0 else code
    if timed_out:
        return ShellExit(exit_code, True, shell_exit_before_timeout)
    return ShellExit(exit_code)


def _watch_exit(loop: asyncio.AbstractEventLoop, pid: int, on_exit: Callable[[], bool]) -> Callable[[], None]:
    """Call ``on_exit`` until it reports the exit of ``pid``: a pidfd where available, else polling."""
    handle: asyncio.TimerHandle | None = None
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = -1

    def poll() -> None:
        nonlocal handle
        handle = None if on_exit() else loop.call_later(0.02, poll)

    def on_pidfd() -> None:
        if on_exit():
            loop.remove_reader(pidfd)

    if pidfd < 0:
        poll()
    elif not on_exit():
        loop.add_reader(pidfd, on_pidfd)

    def stop() -> None:
        if handle is not None:
            handle.cancel()
        if pidfd >= 0:
            loop.remove_reader(pidfd)
            os.close(pidfd)

    return stop
