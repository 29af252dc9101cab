"""The session's event relay: agent-core events in, session events out.

Each agent event goes through the queue mirrors and the extensions' handlers (which run first, as
pi's do) before listeners see it; a finished message is saved to the session file before it is
emitted, and the entry it became is remembered so a failed attempt can later be omitted from the
context. ``events()`` readers are tracked here so the session can wait for them to catch up.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Protocol

from pi_coding_agent.agent.listeners import Listeners
from pi_coding_agent.coding.event_stream import EventStream
from pi_coding_agent.coding.events import AgentEvent, CoreEvent, Message, MessageStartEvent
from pi_coding_agent.coding.messages import last_assistant, message_text
from pi_coding_agent.coding.session_host import Listener

if TYPE_CHECKING:
    from pi_coding_agent.coding.extensions.runner import ExtensionRunner
    from pi_coding_agent.coding.retry import RetrySeries
    from pi_coding_agent.coding.runtime import SessionRuntime
    from pi_coding_agent.coding.services.queue_mirror import QueueMirror
    from pi_coding_agent.coding.session import SessionManager


class RelayHost(Protocol):
    """What the relay reads of the session at each event (all of it may be replaced meanwhile)."""

    rt: SessionRuntime
    queues: QueueMirror
    retry: RetrySeries
    extensions: ExtensionRunner | None

    @property
    def sm(self) -> SessionManager: ...

    @property
    def aborted(self) -> bool: ...


class EventRelay:
    """Listeners, ``events()`` readers and the saved entry of each message of the current run."""

    def __init__(self, host: RelayHost) -> None:
        self.host = host
        self._listeners: Listeners[Listener] = Listeners()
        self.readers: set[EventStream] = set()  # events() iterators being read (``wait_for_idle``)
        self.entries: dict[int, str] = {}  # id(message) -> session entry id

    def events(self, until_settled: bool = False) -> EventStream:
        return EventStream(self.subscribe, until_settled, self.readers)

    def subscribe(self, listener: Listener, types: Iterable[str] | None = None) -> Callable[[], None]:
        return self._listeners.add(listener, types)

    def emit(self, event: AgentEvent) -> None:
        for listener in self._listeners.for_type(event["type"]):
            listener(event)

    def on_agent_event(self, event: CoreEvent) -> Awaitable[None] | None:
        """Keep the queue mirrors, let extension handlers run first (as pi does), then forward."""
        host = self.host
        etype = event["type"]
        if etype == "message_update" and (host.extensions is None or not host.extensions.has_handlers(etype)):
            self.emit(event)  # the streamed delta: nothing to keep, no handler to wait for
            return None
        if event["type"] == "message_start":  # (not per delta: the lookup narrows the event's type)
            message = event["message"]
            if message["role"] == "user":
                host.queues.delivered(message_text(message))
                if host.queues.take_with_images(message):
                    return self._emit_delivered_with_images(event)
        handlers = self._extension_handlers(event)
        if handlers is not None:
            return self._forward_after(handlers, event)
        self._forward(event)
        return None

    def _extension_handlers(self, event: CoreEvent) -> Awaitable[None] | None:
        extensions = self.host.extensions
        return None if extensions is None else extensions.agent_event(event)

    async def _forward_after(self, handlers: Awaitable[None], event: CoreEvent) -> None:
        await handlers
        self._forward(event)

    def _forward(self, event: CoreEvent) -> None:
        """Persist finished messages, decide willRetry (on a copy: the agent's event stays as emitted), then emit."""
        retry = self.host.retry
        if event["type"] == "message_end":
            self.persist(event["message"])
        elif event["type"] == "agent_end":
            last = last_assistant(event["messages"])
            event = {**event, "willRetry": retry.will_retry(last, self.host.aborted)}
        self.emit(event)
        if event["type"] == "message_end" and retry.attempt and _is_success(event["message"]):
            retry.succeeded()

    async def _emit_delivered_with_images(self, event: MessageStartEvent) -> None:
        """A queued message's images are normalised as it is delivered, before anyone sees or saves it."""
        await self.normalise_images(event["message"])
        handlers = self._extension_handlers(event)
        if handlers is not None:
            await handlers
        self.emit(event)

    async def normalise_images(self, message: Message) -> None:
        """Resize/re-encode a user message's images (in a thread) and append their hints to its text."""
        if message["role"] != "user":
            return
        content = message["content"]
        if isinstance(content, list) and any(b["type"] == "image" for b in content):
            from pi_coding_agent.coding.tools.images import normalise_user_content

            message["content"] = await asyncio.to_thread(normalise_user_content, content,
                                                         self.host.rt.image_policy())

    def persist(self, message: Message) -> None:
        entry = self.host.sm.append_message(message)
        self.entries[id(message)] = entry["id"]


def _is_success(message: Message) -> bool:
    return message["role"] == "assistant" and message["stopReason"] not in ("error", "aborted")
