"""A small abort signal shared by the layers (the asyncio analogue of an AbortController).

Cancellation is asyncio cancellation underneath; the signal only says *why* a task was cancelled,
so the layer that owns a message can turn it into ``stopReason: "aborted"`` instead of an error.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable


class AbortSignal:
    __slots__ = ("_callbacks", "_event", "aborted", "reason")

    def __init__(self) -> None:
        self.aborted = False
        self.reason: str | None = None
        self._callbacks: list[Callable[[], None]] = []
        self._event: asyncio.Event | None = None

    def abort(self, reason: str | None = None) -> None:
        """Mark the signal aborted and run every callback once (idempotent)."""
        if self.aborted:
            return
        self.aborted = True
        self.reason = reason
        callbacks, self._callbacks = self._callbacks, []
        for cb in callbacks:
            cb()
        if self._event is not None:
            self._event.set()

    def on_abort(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Run ``callback`` on abort (at once if already aborted); returns a remover."""
        if self.aborted:
            callback()
            return lambda: None
        self._callbacks.append(callback)

        def remove() -> None:
            with contextlib.suppress(ValueError):
                self._callbacks.remove(callback)

        return remove

    async def wait(self) -> None:
        """Wait until the signal is aborted."""
        if self.aborted:
            return
        if self._event is None:
            self._event = asyncio.Event()
        await self._event.wait()

    def cancel_task_on_abort(self, task: asyncio.Task[object]) -> Callable[[], None]:
        """Cancel ``task`` when the signal fires; returns a remover."""

        def cancel() -> None:
            task.cancel()

        return self.on_abort(cancel)


async def sleep_abortable(seconds: float, signal: AbortSignal | None) -> bool:
    """Sleep; return False early (without raising) when the signal aborts."""
    if signal is None:
        await asyncio.sleep(seconds)
        return True
    if signal.aborted:
        return False
    waiter = asyncio.ensure_future(signal.wait())
    try:
        done, _ = await asyncio.wait({waiter}, timeout=seconds)
    finally:
        waiter.cancel()
    return not done
