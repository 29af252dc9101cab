"""Blocking file work for the tools, kept off the event loop without ever holding the process.

A thread blocked in ``open()`` cannot be interrupted. ``asyncio.to_thread`` uses the default
executor, which ``asyncio.run`` and interpreter exit both join, so one stuck read kept the agent from
exiting and a handful of them exhausted the pool. File work therefore runs in daemon threads of its
own, and the tools refuse the files that block by nature (FIFOs, sockets, devices) before opening.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
import threading
from collections.abc import Callable
from typing import TypeVar

from pi_coding_agent.agent.tool import ToolError

T = TypeVar("T")

_SPECIAL_KINDS: tuple[tuple[Callable[[int], bool], str], ...] = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def special_file_kind(path: str) -> str | None:
    """What ``path`` is when it exists and is neither a regular file nor a directory."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    return next((kind for test, kind in _SPECIAL_KINDS if test(mode)), None)


def refuse_special_file(path: str, shown: str, tool: str) -> None:
    """Raise a tool error the model can read instead of blocking on a file that is not regular."""
    kind = special_file_kind(path)
    if kind is not None:
        raise ToolError(f"{shown} is {kind}, not a regular file: {tool} only works on regular files")


async def run_blocking(fn: Callable[..., T], *args: object) -> T:
    """``fn(*args)`` in a daemon thread; cancelling the await abandons the thread, never waits for it."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(result: T | None, error: BaseException | None) -> None:
        if future.done():
            return
        if error is None:
            future.set_result(result)  # type: ignore[arg-type]
        else:
            future.set_exception(error)

    def work() -> None:
        try:
            outcome: tuple[T | None, BaseException | None] = (fn(*args), None)
        except BaseException as exc:  # handed to the awaiting task, which decides
            outcome = (None, exc)
        with contextlib.suppress(RuntimeError):  # the loop closed while this thread was blocked
            loop.call_soon_threadsafe(settle, *outcome)

    threading.Thread(target=work, name=f"pi-{getattr(fn, '__name__', 'work')}", daemon=True).start()
    return await future


async def run_settled(fn: Callable[..., T], *args: object) -> T:
    """Like :func:`run_blocking`, but a cancelled caller still waits for the work to settle.

    For mutations: the file lock the caller holds must outlive the write it protects.
    """
    work = asyncio.ensure_future(run_blocking(fn, *args))
    try:
        return await asyncio.shield(work)
    except asyncio.CancelledError:
        await asyncio.wait({work})
        raise
