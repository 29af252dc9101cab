"""A session's events as an async iterator, for hosts that prefer ``async for`` to a callback."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import cast

from pi_coding_agent.coding.events import AgentEvent


class EventStream:
    """Every event from subscription on, in order; unbounded, so a slow reader never blocks the run.

    ``until_settled=True`` ends the iteration after the next ``agent_settled``; ``close()`` (or
    leaving an ``async with``) unsubscribes.
    """

    def __init__(self, subscribe: Callable[[Callable[[AgentEvent], None]], Callable[[], None]],
                 until_settled: bool = False) -> None:
        self._queue: asyncio.Queue[AgentEvent | None] = asyncio.Queue()
        self._until_settled = until_settled
        self._unsubscribe: Callable[[], None] | None = subscribe(self._queue.put_nowait)

    def __aiter__(self) -> EventStream:
        return self

    async def __anext__(self) -> AgentEvent:
        event = await self._queue.get() if self._unsubscribe is not None or not self._queue.empty() else None
        if event is None:
            raise StopAsyncIteration
        if self._until_settled and event["type"] == "agent_settled":
            self.close()
        return cast(AgentEvent, event)

    def close(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
            self._queue.put_nowait(None)

    async def __aenter__(self) -> EventStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()
