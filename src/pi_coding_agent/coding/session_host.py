"""``SessionHost``: the session as the services it owns see it.

``AgentSession`` owns its compaction controller, tree navigator and extension runner; they call back
into it only through this protocol (events, the live store, omitting a failed attempt, the
compacting flag), so none of them imports the session and each can be driven by a small stand-in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Protocol

from pi_coding_agent.coding.events import AgentEvent, Message

if TYPE_CHECKING:
    from pi_coding_agent.coding.events import AgentEvent
    from pi_coding_agent.coding.session import SessionManager

Listener = Callable[["AgentEvent"], None]


class SessionHost(Protocol):
    """Events out, the current store, and the two pieces of run state a service may change."""

    is_compacting: bool  # set while a compaction or branch summary runs; abort waits for False

    @property
    def sm(self) -> SessionManager: ...

    @property
    def is_streaming(self) -> bool: ...

    def emit(self, event: AgentEvent) -> None: ...

    def subscribe(self, listener: Listener, types: Iterable[str] | None = None) -> Callable[[], None]: ...

    def omit_from_context(self, message: Message) -> None: ...

    async def abort(self) -> None: ...
