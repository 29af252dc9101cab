"""Orderly shutdown shared by the headless modes (rpc-protocol.md §1.2).

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
import sys
import traceback
from collections.abc import Awaitable, Callable

SIGNAL_EXIT_CODES = {signal.SIGTERM: 143, signal.SIGHUP: 129, signal.SIGINT: 130}


class OrderlyShutdown:
    """Runs ``cleanup`` exactly once, then resolves ``wait()`` with the exit code."""

    def __init__(self, cleanup: Callable[[], Awaitable[None]]) -> None:
        self._cleanup = cleanup
        self._exit: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._started = False
        self._signals = 0
        self._task: asyncio.Task[None] | None = None

    @property
    def started(self) -> bool:
        return self._started

    def install_signal_handlers(self) -> None:
        loop = asyncio.get_running_loop()
        for signum in SIGNAL_EXIT_CODES:
            with contextlib.suppress(NotImplementedError, RuntimeError):  # no SIGHUP on Windows
                loop.add_signal_handler(signum, self._on_signal, signum)

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
        try:
            await self._cleanup()
        except Exception:
            traceback.print_exc(file=sys.stderr)
        if not self._exit.done():
            self._exit.set_result(code)
