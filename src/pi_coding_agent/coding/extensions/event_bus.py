"""``pi.events``: the channel extensions of one session talk to each other on (extensions.md, "pi.events").

A handler that fails is reported on stderr and never reaches the one that emitted, as in pi; an async
handler runs as its own task, so ``emit`` returns at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Callable

from pi_coding_agent.agent.awaitables import is_awaitable

BusHandler = Callable[[object], object]


class EventBus:
    """Named channels; ``on`` returns the unsubscriber."""

    def __init__(self) -> None:
        self._handlers: dict[str, list[BusHandler]] = {}
        self._tasks: set[asyncio.Task[object]] = set()

    def on(self, channel: str, handler: BusHandler) -> Callable[[], None]:
        handlers = self._handlers.setdefault(channel, [])
        handlers.append(handler)

        def unsubscribe() -> None:
            with contextlib.suppress(ValueError):
                handlers.remove(handler)

        return unsubscribe

    def emit(self, channel: str, data: object = None) -> None:
        for handler in list(self._handlers.get(channel, ())):
            try:
                result = handler(data)
            except Exception as exc:
                _report(channel, exc)
                continue
            if is_awaitable(result):
                task = asyncio.ensure_future(result)
                self._tasks.add(task)
                task.add_done_callback(lambda done: self._finished(channel, done))

    def clear(self) -> None:
        self._handlers.clear()

    def _finished(self, channel: str, task: asyncio.Task[object]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            _report(channel, task.exception())


def _report(channel: str, exc: BaseException | None) -> None:
    print(f"Event handler error ({channel}): {exc}", file=sys.stderr)
