"""The steering and follow-up queues: FIFO lists of complete messages, drained one or all at a time."""

from __future__ import annotations

from typing import Literal, get_args

from pi_coding_agent.agent.events import AgentMessage

QueueMode = Literal["all", "one-at-a-time"]
QUEUE_MODES: tuple[str, ...] = get_args(QueueMode)  # in the order pi lists them in errors


class MessageQueue:
    """Messages waiting for the next poll point; ``mode`` says how many one poll takes."""

    __slots__ = ("_items", "mode")

    def __init__(self, mode: str = "one-at-a-time") -> None:
        self.mode = mode
        self._items: list[AgentMessage] = []

    def __len__(self) -> int:
        return len(self._items)

    def enqueue(self, message: AgentMessage) -> None:
        self._items.append(message)

    def items(self) -> tuple[AgentMessage, ...]:
        """A read-only snapshot, oldest first."""
        return tuple(self._items)

    def drain(self) -> list[AgentMessage]:
        """Take what one poll delivers: the oldest message, or all of them in ``all`` mode."""
        count = len(self._items) if self.mode == "all" else min(1, len(self._items))
        taken, self._items = self._items[:count], self._items[count:]
        return taken

    def clear(self) -> list[AgentMessage]:
        """Empty the queue and return what it held."""
        taken, self._items = self._items, []
        return taken
