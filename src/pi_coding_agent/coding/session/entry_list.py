"""The entries of a session in file order, each held parsed, packed, or only on disk.

A compaction summarises the history before its first kept entry; from then on those entries (and
every entry off the current branch) are only read again by commands that walk the whole file
(``get_tree``, ``get_entries``, stats, export, forks). Entries read from an indexed file
(``file_index``) stay on disk until read and go back there when the model stops seeing them;
entries appended since are kept as their JSON line, a few times smaller than the parsed dicts. So
memory grows with the file's index rather than with the parsed objects.
"""

from __future__ import annotations

import gc
import operator
import os
import re
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, BinaryIO, overload

import orjson

from pi_coding_agent.coding.session.entries import Entry
from pi_coding_agent.coding.session.file_index import FileIndex

_ON_DISK = None  # the item of an entry that is only in the indexed file
_INDEX_LISTS = {"id": "ids", "type": "kinds"}
_READ_BUFFER = 1 << 20
_BLOCK_BYTES = 4 << 20
_MESSAGE_ROLE = re.compile(rb'\{"type":"message","id":"[^"\\]*","parentId":(?:null|"[^"\\]*"),"timestamp":"[^"\\]*",'
                           rb'"message":\{"role":"([A-Za-z]*)"[,}]')


class DamagedEntry(ValueError):
    """An on-disk entry whose line no longer holds it (the file was damaged or replaced)."""


class EntryList(Sequence[Entry]):
    """A list of entries, some stored as ``bytes`` or left in the file; reading one always gives a dict."""

    __slots__ = ("__weakref__", "_closer", "_fd", "_file", "_held", "_index", "_items")

    def __init__(self, entries: Iterable[Entry] = (), index: FileIndex | None = None) -> None:
        self._items: list[Entry | bytes | None] = list(entries)
        # Positions whose item is a parsed entry: what ``pack`` looks at, so that packing after each
        # compaction costs the entries held parsed, not every entry of a long session.
        self._held: set[int] = set(range(len(self._items)))
        self._index: FileIndex | None = None  # the first ``len(index.ids)`` positions are the indexed file's entries
        self._fd: int | None = None  # the indexed file, held open: its entries stay readable if it is deleted
        self._closer: weakref.finalize[Any, EntryList] | None = None
        self._file: BinaryIO | None = None  # open only while a walk reads the file
        if index is not None:
            self._set_index(index)

    @classmethod
    def from_index(cls, index: FileIndex) -> EntryList:
        """Every indexed entry, on disk except those the pass parsed."""
        entries = cls((), index)
        entries._items = [_ON_DISK] * len(index.ids)
        for position, entry in index.parsed.items():
            entries._items[position] = entry
        entries._held = set(index.parsed)
        index.parsed = {}
        return entries

    def __len__(self) -> int:
        return len(self._items)

    @overload
    def __getitem__(self, index: int) -> Entry: ...

    @overload
    def __getitem__(self, index: slice) -> list[Entry]: ...

    def __getitem__(self, index: int | slice) -> Entry | list[Entry]:
        if isinstance(index, slice):
            return [self._entry(position) for position in range(len(self._items))[index]]
        position = index if index >= 0 else index + len(self._items)
        if position < 0:
            raise IndexError("entry index out of range")
        return self._entry(position)

    def __iter__(self) -> Iterator[Entry]:
        return self._each(self._entry)

    def iter_json(self) -> Iterator[bytes]:
        """Every entry serialised as ``orjson.dumps`` gives it, without keeping the parsed entries."""
        return self._each(self.json_at)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, list | EntryList):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, like list

    def append(self, entry: Entry) -> None:
        self._held.add(len(self._items))
        self._items.append(entry)

    def written(self, path: Path, start: int, lines: list[bytes]) -> None:
        """The last ``len(lines)`` entries now lie in ``path`` from ``start`` on: index them, so that
        once the model stops seeing them they go back to disk instead of staying packed. (Skipped
        when the entries before them are not indexed: a migrated file, rewritten whole.)"""
        first = len(self._items) - len(lines)
        if self._index is None and first == 0:
            self._set_index(FileIndex(path))
        index = self._index
        if index is None or len(index.ids) != first or index.path != path:
            return
        for position, line in enumerate(lines, first):
            entry = self._entry(position)
            index.starts.append(start)
            start += len(line)
            index.ends.append(start)
            index.ids.append(entry.get("id"))
            index.parents.append(entry.get("parentId"))
            index.kinds.append(entry.get("type"))

    def _set_index(self, index: FileIndex) -> None:
        """Index ``index.path`` and hold it open (closed with this list, or by ``detach``)."""
        self._index = index
        self._fd = os.open(index.path, os.O_RDONLY | os.O_CLOEXEC)
        self._closer = weakref.finalize(self, os.close, self._fd)

    def _open(self) -> int:
        """A descriptor of the indexed file for one read (the caller closes it); by its path once
        ``close`` let the held one go."""
        assert self._index is not None
        return os.open(self._index.path, os.O_RDONLY | os.O_CLOEXEC) if self._fd is None else os.dup(self._fd)

    def detach(self) -> None:
        """Hold every entry in memory (an on-disk one as its JSON line) and let the file go: before
        the file is rewritten from memory. Reads go through the held descriptor, so this works after
        the file was deleted."""
        if self._index is None:
            return
        on_disk = [position for position, item in enumerate(self._items) if item is _ON_DISK]
        for first in range(0, len(on_disk), 4096):  # parsed a block at a time
            chunk = on_disk[first : first + 4096]
            for position, entry in zip(chunk, self.read_many(chunk), strict=True):
                self._items[position] = memoryview(orjson.dumps(entry)).tobytes()
        self.close()
        self._index = None

    def close(self) -> None:
        """Close the held file (later reads open it by its path again)."""
        if self._closer is not None:
            self._closer()
            self._closer = self._fd = None

    def pop(self) -> Entry:
        entry = self._entry(len(self._items) - 1)
        self._items.pop()
        self._held.discard(len(self._items))
        return entry

    # ----------------------------------------------------------------- links without parsing

    def entry_id(self, position: int) -> Any:
        return self._field(position, "id")

    def kind(self, position: int) -> Any:
        return self._field(position, "type")

    def ids(self) -> list[Any]:
        """Every entry's id, in file order."""
        return self._column("ids", "id")

    def kinds(self) -> list[Any]:
        """Every entry's type, in file order."""
        return self._column("kinds", "type")

    def parents(self) -> list[Any]:
        """Every entry's parent id, in file order."""
        return self._column("parents", "parentId")

    def _column(self, name: str, key: str) -> list[Any]:
        return self._indexed(name) + [self._entry(p).get(key) for p in range(self._on_file(), len(self._items))]

    def path_to(self, position: int | None, by_id: dict[Any, int]) -> list[int]:
        """Positions from the root down to ``position``, following parent ids (stops at a missing
        parent or a cycle); the indexed part of the file is walked without reading an entry, and a
        run of entries each below the one before it (most of a file) is taken in one step."""
        on_file, ids, parents = self._on_file(), self._indexed("ids"), self._indexed("parents")
        # With unique ids (none null) the entry before is the only one its id names, and while every
        # step goes back in the file no id can repeat: ``seen`` is only needed after a step forward.
        runs = len(by_id) == len(self._items) and None not in ids
        path: list[int] = []
        seen: set[Any] | None = None if runs else set()
        while position is not None:
            if seen is None and path and position >= path[-1]:
                seen = {self.entry_id(p) for p in path}
            entry_id, parent = self._link(position)
            if seen is not None:
                if entry_id in seen:
                    break
                seen.add(entry_id)
            elif position < on_file:
                first = _run_start(ids, parents, position)
                path.extend(range(position, first, -1))
                position, parent = first, parents[first]
            path.append(position)
            position = by_id.get(parent) if parent is not None else None
        path.reverse()
        return path

    def _link(self, position: int) -> tuple[Any, Any]:
        """An entry's id and parent id (from the index when it is on file)."""
        if position < self._on_file():
            return self._indexed("ids")[position], self._indexed("parents")[position]
        entry = self._entry(position)
        return entry.get("id"), entry.get("parentId")

    def linked(self, positions: list[int]) -> LinkedPath:
        """The entries at ``positions`` as a path of ``Linked`` views, made as they are looked at."""
        return LinkedPath(self, positions)

    def _on_file(self) -> int:
        return 0 if self._index is None else len(self._index.ids)

    def _indexed(self, name: str) -> list[Any]:
        return [] if self._index is None else getattr(self._index, name)

    def _field(self, position: int, key: str) -> Any:
        if position < self._on_file():
            return self._indexed(_INDEX_LISTS[key])[position]
        return self._entry(position).get(key)

    # ----------------------------------------------------------------- storage

    def pack(self, keep: Callable[[Entry], bool]) -> None:
        """Drop every parsed entry ``keep`` rejects back to the file, or store it as its JSON line."""
        items = self._items
        on_file = 0 if self._index is None else len(self._index.ids)
        dropped = [position for position in self._held if not keep(self._entry(position))]
        for position in dropped:
            # orjson's result keeps its whole output buffer (4 KiB at least): keep an exact copy
            items[position] = _ON_DISK if position < on_file else memoryview(orjson.dumps(items[position])).tobytes()
        self._held.difference_update(dropped)

    def json_at(self, position: int) -> bytes:
        """One entry as ``orjson.dumps`` writes it (a file line is re-encoded: pi may space or escape it
        differently)."""
        item = self._items[position]
        if isinstance(item, bytes):
            return item
        return orjson.dumps(self._entry(position) if item is _ON_DISK else item)

    def _entry(self, position: int) -> Entry:
        item = self._items[position]
        if isinstance(item, dict):
            return item
        if isinstance(item, bytes):
            entry: Entry = orjson.loads(item)
            return entry
        return self._read(position)

    def _read(self, position: int) -> Entry:
        """An on-disk entry from its line; an id that no longer matches means the file was replaced."""
        index = self._index
        assert index is not None
        start, size = index.starts[position], index.ends[position] - index.starts[position]
        if self._file is not None:  # a walk: buffered reads, mostly forward, few system calls
            self._file.seek(start)
            line = self._file.read(size)
        else:
            fd = self._open()
            try:
                line = os.pread(fd, size, start)
            finally:
                os.close(fd)
        return self._checked(position, line)

    def _checked(self, position: int, line: bytes | memoryview) -> Entry:
        """An on-disk entry parsed from its line; an id that no longer matches means the file was replaced."""
        index = self._index
        assert index is not None
        try:
            entry = orjson.loads(line)
        except orjson.JSONDecodeError:
            entry = None
        if not isinstance(entry, dict) or entry.get("id") != index.ids[position]:
            raise DamagedEntry(f"Session file {index.path} is damaged or was replaced: no entry {index.ids[position]} "
                               f"at byte {index.starts[position]}")
        return entry

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Hold the indexed file open while a walk reads many entries (nested walks share it)."""
        if self._file is not None or self._index is None:
            yield
            return
        self._file = open(self._open(), "rb", buffering=_READ_BUFFER)  # noqa: SIM115 - closed below
        try:
            yield
        finally:
            with suppress(OSError):
                self._file.close()
            self._file = None

    def read_many(self, positions: Iterable[int]) -> list[Entry]:
        """The entries at ``positions``; on-disk lines are read in large blocks (a branch mostly lies
        in file order)."""
        entries: list[Entry] = []
        lines: _ForwardReader | None = None
        try:
            with gc_paused():
                for position in positions:
                    if self._items[position] is not _ON_DISK:
                        entries.append(self._entry(position))
                        continue
                    assert self._index is not None
                    lines = lines or _ForwardReader(self._open())
                    buffer, start, end = lines.locate(self._index.starts[position], self._index.ends[position])
                    entries.append(self._checked(position, memoryview(buffer)[start:end]))
        finally:
            if lines is not None:
                lines.close()
        return entries

    def messages_of(self, role: str) -> Iterator[Entry]:
        """The message entries whose message has ``role``, in file order; an on-disk line whose
        message starts by naming another role (pi and this package write ``role`` first) is not parsed."""
        wanted = role.encode()
        for _, _, entry in self.skim(positions_of(self.kinds(), "message"), lambda _, named, *__: named in (None, wanted)):
            if entry is not None and (entry.get("message") or {}).get("role") == role:
                yield entry

    def skim(self, positions: Iterable[int], parse: Callable[[int, bytes | None, bytearray, int, int], bool],
             ) -> Iterator[tuple[int, bytes | None, Entry | None]]:
        """``(position, role, entry)`` for each of ``positions`` (increasing). An on-disk line is read
        in large blocks and parsed only when ``parse(position, role, buffer, start, end)`` says so
        (else ``entry`` is None); ``role`` is what a message line names first (``_MESSAGE_ROLE``), None
        for any other line and for entries held in memory, which are always given."""
        index = self._index
        lines = None if index is None else _ForwardReader(self._open())
        try:
            for position in positions:
                if self._items[position] is not _ON_DISK:
                    yield position, None, self._entry(position)
                    continue
                assert index is not None and lines is not None
                buffer, start, end = lines.locate(index.starts[position], index.ends[position])
                found = _MESSAGE_ROLE.match(buffer, start, end)
                role = None if found is None else found[1]
                parsed = self._checked(position, memoryview(buffer)[start:end]) if parse(
                    position, role, buffer, start, end) else None
                yield position, role, parsed
        finally:
            if lines is not None:
                lines.close()

    def copyable(self) -> bool:
        """Whether every entry lies in the indexed file (nothing appended or migrated since), written
        the way it would be written again (see ``FileIndex.as_written``)."""
        return self._index is not None and len(self._index.ids) == len(self._items) and self._index.as_written

    def file_lines(self) -> Iterator[bytes]:
        """Every entry's line as the indexed file holds it, each ending in a newline, in pieces of
        about a megabyte (lines next to each other are copied as one span). Needs ``copyable``. A
        carriage return is dropped: outside a string it is only whitespace, and none is written."""
        index = self._index
        assert index is not None and self.copyable()
        spans: list[list[int]] = []
        for start, end in zip(index.starts, index.ends, strict=True):
            if spans and start == spans[-1][1] + 1 and end - spans[-1][0] <= _READ_BUFFER:
                spans[-1][1] = end
            else:
                spans.append([start, end])
        fd = self._open()
        try:
            for start, end in spans:
                piece = os.pread(fd, end - start, start)
                if len(piece) != end - start:
                    raise DamagedEntry(f"Session file {index.path} is damaged or was replaced: it ends before "
                                       f"byte {end}")
                yield (piece.replace(b"\r", b"") if b"\r" in piece else piece) + b"\n"
        finally:
            os.close(fd)

    def _each(self, read: Callable[[int], Any]) -> Iterator[Any]:
        with self.reading():
            position = 0
            while position < len(self._items):  # entries appended meanwhile are read too, like a list
                yield read(position)
                position += 1


class _ForwardReader:
    """Lines of a file asked for in increasing offset order, served from one reused buffer: a system
    call per few megabytes instead of one per line. Owns (closes) the descriptor it is given."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._buffer = bytearray(_BLOCK_BYTES)
        self._base = 0  # file offset of the buffer's first byte
        self._filled = 0

    def locate(self, start: int, end: int) -> tuple[bytearray, int, int]:
        """The buffer holding the file's bytes from ``start`` to ``end`` (fewer when the file ends
        first), and where they lie in it."""
        if start < self._base or end > self._base + self._filled:
            if end - start > len(self._buffer):
                self._buffer = bytearray(end - start)
            self._base = start
            self._filled = os.preadv(self._fd, [self._buffer], start)
        return self._buffer, start - self._base, min(end - self._base, self._filled)

    def close(self) -> None:
        os.close(self._fd)


def positions_of(kinds: list[Any], kind: str) -> Iterator[int]:
    """Positions of the entries of type ``kind``, in file order, found at C speed (``list.index``)."""
    position = -1
    with suppress(ValueError):
        while True:
            position = kinds.index(kind, position + 1)
            yield position


@contextmanager
def gc_paused() -> Iterator[None]:
    """No garbage collection while many entries are parsed: orjson makes only acyclic containers, and
    the collections their number triggers would each walk every object of the process for nothing."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _run_start(ids: list[Any], parents: list[Any], position: int) -> int:
    """The first position of the run ending at ``position`` in which every entry's parent is the entry
    just before it; compared a growing window at a time, so a short run costs little."""
    size = 64
    while position > 0:
        low = max(0, position - size)
        linked = list(map(operator.eq, parents[low + 1 : position + 1], ids[low:position]))
        if False in linked:
            return low + len(linked) - linked[::-1].index(False)
        position, size = low, size * 2
    return 0


class LinkedPath(Sequence["Linked"]):
    """A root-to-leaf path of positions seen as entries (``Linked``); ``kinds`` is its column of types."""

    __slots__ = ("_entries", "_positions", "kinds")

    def __init__(self, entries: EntryList, positions: list[int]) -> None:
        self._entries = entries
        self._positions = positions
        kinds = entries._indexed("kinds")
        if not positions or max(positions) < entries._on_file():
            self.kinds = list(map(kinds.__getitem__, positions))
        else:
            self.kinds = [entries.kind(p) for p in positions]

    def __len__(self) -> int:
        return len(self._positions)

    @overload
    def __getitem__(self, index: int) -> Linked: ...

    @overload
    def __getitem__(self, index: slice) -> list[Linked]: ...

    def __getitem__(self, index: int | slice) -> Linked | list[Linked]:
        if isinstance(index, slice):
            return [self[i] for i in range(len(self._positions))[index]]
        position = self._positions[index]
        return Linked(self._entries, position, self.kinds[index], self._entries.entry_id(position))


class Linked:
    """An entry seen through the index: ``type``, ``id`` and ``parentId`` cost nothing, any other key
    reads the entry. Lets the path functions of ``context`` run over a long branch reading only the
    entries they look into."""

    __slots__ = ("_entries", "_id", "_kind", "_position")

    def __init__(self, entries: EntryList, position: int, kind: Any, entry_id: Any) -> None:
        self._entries = entries
        self._position = position
        self._kind = kind
        self._id = entry_id

    def get(self, key: str, default: Any = None) -> Any:
        if key == "type":
            value = self._kind
        elif key == "id":
            value = self._id
        else:
            value = self._entries[self._position].get(key)
        return default if value is None else value
