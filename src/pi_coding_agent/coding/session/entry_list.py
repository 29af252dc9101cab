"""The entries of a session in file order, with the ones the model no longer sees kept packed.

A compaction summarises the history before its first kept entry; from then on those entries (and
every entry off the current branch) are only read again by commands that walk the whole file
(``get_tree``, ``get_entries``, stats, export, forks). They are kept as their JSON line, a few times
smaller than the parsed dicts, and decoded when read, so a long conversation's memory grows with its
file rather than with the parsed objects.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import overload

import orjson

from pi_coding_agent.coding.session.entries import Entry


class EntryList(Sequence[Entry]):
    """A list of entries, some stored as ``bytes``; reading one always gives a dict."""

    __slots__ = ("_items",)

    def __init__(self, entries: Iterable[Entry] = ()) -> None:
        self._items: list[Entry | bytes] = list(entries)

    def __len__(self) -> int:
        return len(self._items)

    @overload
    def __getitem__(self, index: int) -> Entry: ...

    @overload
    def __getitem__(self, index: slice) -> list[Entry]: ...

    def __getitem__(self, index: int | slice) -> Entry | list[Entry]:
        if isinstance(index, slice):
            return [_decoded(item) for item in self._items[index]]
        return _decoded(self._items[index])

    def __iter__(self) -> Iterator[Entry]:
        return map(_decoded, self._items)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, list | EntryList):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, like list

    def append(self, entry: Entry) -> None:
        self._items.append(entry)

    def pop(self) -> Entry:
        return _decoded(self._items.pop())

    def pack(self, keep: Callable[[Entry], bool]) -> None:
        """Store every parsed entry ``keep`` rejects as its JSON line."""
        items = self._items
        for position, item in enumerate(items):
            if not isinstance(item, bytes) and not keep(item):
                # orjson's result keeps its whole output buffer (4 KiB at least): keep an exact copy
                items[position] = memoryview(orjson.dumps(item)).tobytes()


def _decoded(item: Entry | bytes) -> Entry:
    if isinstance(item, bytes):
        entry: Entry = orjson.loads(item)
        return entry
    return item
