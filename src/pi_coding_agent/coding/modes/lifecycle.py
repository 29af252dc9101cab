"""Orderly shutdown shared by the headless modes, and who owns their stdin and stdout.

EOF (RPC) or the end of the prompts (print/JSON) shuts down with exit code 0; SIGTERM with 143,
SIGHUP with 129 and SIGINT with 130, after the same cleanup (so Ctrl-C saves the partial answer as
aborted instead of unwinding the loop with a traceback). Process managers often close stdin and signal together,
so a single signal during shutdown is tolerated; a second one exits at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sys
import traceback
from collections.abc import Awaitable, Callable
from typing import Any

SIGNAL_EXIT_CODES = {signal.SIGTERM: 143, signal.SIGHUP: 129, signal.SIGINT: 130}


class OrderlyShutdown:
    """Runs ``cleanup`` exactly once, then resolves ``wait()`` with the exit code."""

    def __init__(self, cleanup: Callable[[], Awaitable[None]]) -> None:
        self._cleanup = cleanup
        self._exit: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._started = False
        self._signals = 0
        self._task: asyncio.Task[None] | None = None
        self._wake_up: tuple[socket.socket, socket.socket] | None = None  # kept open for the process's life

    @property
    def started(self) -> bool:
        return self._started

    def install_signal_handlers(self) -> None:
        """Handle the exit signals on the loop, as ``loop.add_signal_handler`` would, whose check of
        the handler imports ``inspect`` (which a start-up otherwise never loads: ``start_up``).

        A signal can land on any thread; its byte on the wake-up socket wakes the loop, whose thread
        then runs the Python handler, which schedules ``_on_signal``."""
        loop = asyncio.get_running_loop()
        self._wake_up = socket.socketpair()
        reader, writer = self._wake_up
        reader.setblocking(False)
        writer.setblocking(False)
        signal.set_wakeup_fd(writer.fileno())
        loop.add_reader(reader.fileno(), _drain, reader)

        def handler(signum: int, _frame: object) -> None:
            loop.call_soon_threadsafe(self._on_signal, signal.Signals(signum))

        for signum in SIGNAL_EXIT_CODES:
            with contextlib.suppress(ValueError, OSError):  # not the main thread; no such signal here
                signal.signal(signum, handler)

    def begin(self, code: int) -> None:
        if self._started:
            return
        self._started = True
        self._task = asyncio.create_task(self._run(code), name="shutdown")

    async def wait(self) -> int:
        return await asyncio.shield(self._exit)

    def _on_signal(self, signum: signal.Signals) -> None:
        self._signals += 1
        code = SIGNAL_EXIT_CODES[signum]
        if not self._started:
            self.begin(code)
        elif self._signals > 1:
            os._exit(code)

    async def _run(self, code: int) -> None:
        """The exit code is set whatever the cleanup does: a cleanup that fails, or whose report
        fails too (the client closed stderr with stdout), must never leave the process running."""
        try:
            await self._cleanup()
        except Exception:
            with contextlib.suppress(Exception):
                traceback.print_exc(file=sys.stderr)
        finally:
            if not self._exit.done():
                self._exit.set_result(code)


def keep_sigint_from_asyncio() -> None:
    """Before ``asyncio.run``: SIGINT gets a plain Python handler (it raises ``KeyboardInterrupt``, as
    the default one does), so asyncio leaves it alone instead of installing its own, whose replacement
    by ``install_signal_handlers`` would format the main task's repr (and so load ``inspect``)."""
    with contextlib.suppress(ValueError):  # not the main thread: signals are not ours to set
        signal.signal(signal.SIGINT, _interrupt)


def _interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def _drain(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.recv(4096)


class QuietStderr:
    """``sys.stderr`` that drops what it cannot write once the client closed the pipe: a warning
    about a closed stdout must not raise in turn (``BrokenPipeError``) and unwind the shutdown."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return int(self._stream.write(text))
        except (OSError, ValueError):  # broken pipe, or a stream closed at exit
            return len(text)

    def flush(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self._stream.flush()

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


# who owns stdin and stdout (RPC, ACP, print and JSON modes). stdout belongs to the mode's output
# alone: the real fd 1 is duplicated for the writer and fd 1 itself is pointed at stderr, so a stray
# ``print``, a library warning or a child that inherits fd 1 lands on stderr instead of corrupting the
# output. fd 0 becomes /dev/null so that no child process can swallow command bytes. Here rather than
# in ``rpc.transport`` so that print mode does not load the RPC framing.


def take_over_stdout() -> int:
    """Move the real stdout to a private fd and point fd 1 (and ``sys.stdout``) at stderr.

    The returned fd is non-inheritable, so tool child processes cannot write records either.
    """
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    output_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr = QuietStderr(sys.stderr)
    return output_fd


def take_over_stdin() -> int:
    """Move the real stdin to a private fd and give fd 0 /dev/null, so no child swallows commands."""
    input_fd = os.dup(0)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    return input_fd


def write_all(fd: int, data: bytes | bytearray) -> None:
    """Blocking write of every byte (for regular files and the final output of print mode)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
