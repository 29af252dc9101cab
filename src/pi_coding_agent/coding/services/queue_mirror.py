"""The texts of queued steering and follow-up messages, as clients see them in ``queue_update``.

The agent's queues hold whole messages; clients are shown the texts, in order, and each text leaves
the mirror when its message is delivered (``message_start`` of a user message with that text).
Messages queued with images are remembered so their images are normalised only on delivery, as pi
does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pi_coding_agent.agent.agent import Agent
from pi_coding_agent.coding.events import AgentEvent, Message


class QueueMirror:
    """Queue texts for one session; every change is announced through ``emit``."""

    def __init__(self, agent: Agent, emit: Callable[[AgentEvent], None]) -> None:
        self._agent = agent
        self._emit = emit
        self._steering: list[str] = []
        self._follow_up: list[str] = []
        self._with_images: list[Message] = []

    def __len__(self) -> int:
        return len(self._steering) + len(self._follow_up)

    def _announce(self) -> None:
        self._emit({"type": "queue_update", "steering": list(self._steering), "followUp": list(self._follow_up)})

    def enqueue(self, kind: str, message: Message, text: str, has_images: bool) -> None:
        """Queue ``message`` on the agent (``kind`` is "steer" or "followUp") and show its text."""
        if has_images:
            self._with_images.append(message)
        if kind == "steer":
            self._agent.steer(message)
            self._steering.append(text)
        else:
            self._agent.follow_up(message)
            self._follow_up.append(text)
        self._announce()

    def delivered(self, text: str) -> None:
        """A user message with ``text`` started: the first matching queued text leaves the mirror."""
        for texts in (self._steering, self._follow_up):
            if text in texts:
                texts.remove(text)
                self._announce()
                return

    def take_with_images(self, message: Message) -> bool:
        """True (once) when ``message`` was queued with images still to normalise."""
        if not any(queued is message for queued in self._with_images):
            return False
        self._with_images = [queued for queued in self._with_images if queued is not message]
        return True

    def clear(self) -> dict[str, Any]:
        """Empty both queues; returns the texts that were waiting."""
        self._agent.clear_steering_queue()
        self._agent.clear_follow_up_queue()
        cleared = {"steering": self._steering, "followUp": self._follow_up}
        self._steering, self._follow_up = [], []
        self._with_images.clear()
        self._announce()
        return cleared

    def reset(self) -> None:
        """Forget everything without announcing it (the session was replaced)."""
        self._steering.clear()
        self._follow_up.clear()
        self._agent.clear_steering_queue()
        self._agent.clear_follow_up_queue()
