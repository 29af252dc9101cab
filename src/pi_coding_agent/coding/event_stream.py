"""A session's events as an async iterator, for hosts that prefer ``async for`` to a callback."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Iterable, MutableSet

from pi_coding_agent.coding.events import AgentEvent

Subscribe = Callable[[Callable[[AgentEvent], None], Iterable[str] | None], Callable[[], None]]


class EventStream:
    """Every event from subscription on, in order; unbounded, so a slow reader never blocks the run.

    ``until_settled=True`` ends the iteration after the next ``agent_settled``; ``close()`` (or
    leaving an ``async with``) unsubscribes. Once iterated, the stream joins ``readers``, whom the
    session's ``wait_for_idle`` waits for until each has taken its ``agent_settled``.
    """

    def __init__(self, subscribe: Subscribe, until_settled: bool = False,
                 readers: MutableSet[EventStream] | None = None) -> None:
        self._queue: deque[AgentEvent | None] = deque()  # None: closed
        self._waiter: asyncio.Future[None] | None = None  # the reader, parked on an empty queue
        self._until_settled = until_settled
        self._readers = readers
        self.reader: asyncio.Task[object] | None = None  # the task iterating, once one does
        self._settled_due = 0  # agent_settled events queued and not yet taken
        self._caught_up = asyncio.Event()
        self._caught_up.set()
        stop_all = subscribe(self._put, None)
        stop_settled = subscribe(self._settled_queued, ("agent_settled",))  # off the hot path of deltas

        def unsubscribe() -> None:
            stop_all()
            stop_settled()

        self._unsubscribe: Callable[[], None] | None = unsubscribe

    def _put(self, event: AgentEvent | None) -> None:
        """Queue an event and wake a parked reader (a deque and one future: cheaper per delta than a Queue)."""
        self._queue.append(event)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def _wait(self) -> None:
        """Park until something is queued (an event, or the None that ends the stream)."""
        while not self._queue:
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None

    def _settled_queued(self, event: AgentEvent) -> None:
        self._settled_due += 1
        self._caught_up.clear()

    def _join_readers(self) -> None:
        if self.reader is None and self._readers is not None and self._unsubscribe is not None:
            self.reader = asyncio.current_task()
            self._readers.add(self)

    def _take(self, event: AgentEvent) -> AgentEvent:
        if event["type"] == "agent_settled":
            self._settled_due -= 1
            if not self._settled_due:
                self._caught_up.set()
            if self._until_settled:
                self.close()
        return event

    def __aiter__(self) -> EventStream:
        return self

    async def __anext__(self) -> AgentEvent:
        self._join_readers()
        if self._unsubscribe is not None:
            await self._wait()
        event = self._queue.popleft() if self._queue else None
        if event is None:
            raise StopAsyncIteration
        return self._take(event)

    async def batch(self) -> list[AgentEvent]:
        """Every event queued by now (waiting for the first): one wake-up per burst of deltas rather
        than one per event, for readers that keep up with a fast stream; ``[]`` once the stream ended."""
        self._join_readers()
        if self._unsubscribe is not None:
            await self._wait()
        taken: list[AgentEvent] = []
        while self._queue and (event := self._queue[0]) is not None:
            self._queue.popleft()
            taken.append(self._take(event))
        if not taken and self._queue:
            self._queue.popleft()  # the end
        return taken

    async def caught_up(self) -> None:
        """Return once the reader has taken every ``agent_settled`` delivered so far (or the stream closed)."""
        await self._caught_up.wait()

    def close(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
            self._put(None)
            self._caught_up.set()
            if self._readers is not None:
                self._readers.discard(self)

    async def __aenter__(self) -> EventStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()
