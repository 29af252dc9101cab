"""Event subscribers that say which event types they take, so a streamed delta reaches only those
that want it (the RPC writer) instead of every subscriber's type check."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

L = TypeVar("L")


class Listeners(Generic[L]):
    """Subscribers in subscription order, each to every event (``types=None``) or to the types it
    names. The list for a type is built on its first event and kept until the next (un)subscribe."""

    __slots__ = ("_entries", "_routes")

    def __init__(self) -> None:
        self._entries: list[tuple[L, frozenset[str] | None]] = []
        self._routes: dict[str, tuple[L, ...]] = {}

    def add(self, listener: L, types: Iterable[str] | None = None) -> Callable[[], None]:
        """Subscribe ``listener``; returns its unsubscriber (a second call does nothing)."""
        entry = (listener, None if types is None else frozenset(types))
        self._entries.append(entry)
        self._routes = {}

        def remove() -> None:  # by identity: the same listener may be subscribed twice
            kept = [other for other in self._entries if other is not entry]
            if len(kept) < len(self._entries):
                self._entries = kept
                self._routes = {}

        return remove

    def for_type(self, event_type: str) -> tuple[L, ...]:
        """The listeners of ``event_type``, in subscription order."""
        route = self._routes.get(event_type)
        if route is None:
            route = self._routes[event_type] = tuple(
                listener for listener, types in self._entries if types is None or event_type in types)
        return route
