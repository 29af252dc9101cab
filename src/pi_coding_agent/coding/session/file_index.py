"""One pass over a session file: where each entry's line lies and how entries link, without parsing them.

Opening a large session used to parse every line and hold the result, although the model only sees
the branch since the last compaction and most commands need nothing but ids and parent links. pi and
this package both write an entry's first keys as ``{"type":…,"id":…,"parentId":…``, so a regular
expression reads those three from the start of the line; any other shape is parsed in full, as are
the few kinds the store needs at once (labels, the session name, compactions). The other entries are
read back by offset when they are needed (see ``EntryList``).

A write cut short by a crash leaves a broken line that no later entry names as its parent (the
session reopened without it, so what came next hangs below the entry before). So every entry that
is nobody's parent (the leaves: a handful) is parsed before it is trusted; a broken one is skipped
with a warning, as a full parse would.
"""

from __future__ import annotations

import os
import re
import sys
from array import array
from contextlib import suppress
from dataclasses import field
from io import RawIOBase
from pathlib import Path
from typing import Any

import orjson

from pi_coding_agent.ai.records import record
from pi_coding_agent.coding.session.entries import Entry
from pi_coding_agent.coding.session.storage import is_header

_ID = rb'([\x20\x21\x23-\x5b\x5d-\x7e]*)'  # printable ASCII but quote and backslash: taken as it is
# The kinds the store needs at once (labels, the name, compactions) and stray headers do not match.
_PREFIX = re.compile(rb'\{"type":"(?!(?:label|session_info|compaction|session)")([A-Za-z0-9_]+)","id":"' + _ID
                     + rb'","parentId":(?:null|"' + _ID + rb'")[,}]')
_BLOCK_BYTES = 4 << 20
_FEW_LEAVES = 64
_KIND_NAMES: dict[bytes, str] = {}  # entry types as read, decoded once
_NULL_TO_QUOTE: dict[Any, Any] = {None: b'"'}
_QUOTE_TO_NULL: dict[Any, Any] = {'"': None}


@record
class FileIndex:
    """Per entry position: its line's byte range, id, parent id and type; plus the header."""

    path: Path
    header: Entry | None = None
    starts: array[int] = field(default_factory=lambda: array("q"))
    ends: array[int] = field(default_factory=lambda: array("q"))
    ids: list[object] = field(default_factory=list)
    parents: list[object] = field(default_factory=list)
    kinds: list[object] = field(default_factory=list)
    parsed: dict[int, Entry] = field(default_factory=dict)  # position -> entry parsed during the pass
    # Every line parsed during the pass (the header among them) is byte for byte what ``orjson.dumps``
    # writes for its record, as pi's files are: lines may then be copied instead of re-encoded.
    as_written: bool = True
    # unreadable lines before the header: warned of once there is one (else the file is refused whole)
    early_unreadable: list[int] = field(default_factory=list)


def index_file(path: Path) -> FileIndex:
    """Index every entry of ``path``; ``header`` is None when the first readable record is not one."""
    index = FileIndex(path)
    with path.open("rb", buffering=0) as handle:
        try:
            _scan(index, handle)
        except _NotASession:
            return FileIndex(path)
        if index.header is not None:
            _check_leaves(index, handle.fileno())
    return index


class _NotASession(Exception):
    """The first readable record is not a session header."""


def _scan(index: FileIndex, handle: RawIOBase) -> None:
    """Every line, found with ``find`` in one reused buffer and matched in place.

    Nothing is copied per line, and no memory is taken per block (a fresh 4 MiB ``bytes`` per read
    costs more in page faults than the scan). A regular line only leaves its matched fields and where
    it ends; the rest is worked out for many lines at once (see ``_Pending``)."""
    match = _PREFIX.match
    pending = _Pending(index)
    add_fields, add_end = pending.fields.append, pending.ends.append
    buffer = bytearray(_BLOCK_BYTES)
    find = buffer.find
    filled, more = 0, True
    while more:
        with memoryview(buffer) as view:
            read = handle.readinto(view[filled:]) or 0
        more = read > 0
        filled += read
        position = pending.start = 0
        while (end := find(b"\n", position, filled)) >= 0 or (not more and position < filled):
            end = filled if end < 0 else end  # the last line has no newline
            found = match(buffer, position, end) if index.header is not None else None
            if found is not None:
                add_fields(found.groups())
                add_end(end)
            else:
                pending.flush()
                offset = pending.base + position
                if _parsed(index, bytes(buffer[position:end]), handle.fileno(), offset):
                    index.starts.append(offset)
                    index.ends.append(pending.base + end)
                pending.start = end + 1
            position = end + 1
        pending.flush()
        pending.base += position
        filled -= position
        if position:  # the partial line moves to the front
            buffer[:filled] = buffer[position : position + filled]
        elif filled == len(buffer):  # a line longer than the buffer
            buffer.extend(bytes(len(buffer)))
            find = buffer.find


class _Pending:
    """Regular lines met since the last flush, one right after another in the buffer from ``start``:
    their matched ``(type, id, parent id)`` as bytes and where each ends. Decoding the ids joined is
    one call instead of two per line, and each line starts one byte after the one before it ends."""

    def __init__(self, index: FileIndex) -> None:
        self.index = index
        self.base = 0  # file offset of the buffer's first byte
        self.start = 0  # in the buffer, where the first pending line starts
        self.fields: list[tuple[Any, ...]] = []
        self.ends: list[int] = []  # in the buffer

    def flush(self) -> None:
        if not self.fields:
            return
        index, base, ends = self.index, self.base, self.ends
        index.starts.append(base + self.start)
        index.starts.extend(map((base + 1).__add__, ends[:-1]))
        index.ends.extend(map(base.__add__, ends))
        kinds, ids, parents = zip(*self.fields, strict=True)
        self.fields.clear()
        ends.clear()
        index.ids += b"\n".join(ids).decode().split("\n")  # a matched id holds no newline (nor quote)
        # a quote (never in a matched id) stands for null while joined; dict.get keeps it at C speed
        joined = b"\n".join(map(_NULL_TO_QUOTE.get, parents, parents)).decode().split("\n")
        index.parents += map(_QUOTE_TO_NULL.get, joined, joined)
        names = _KIND_NAMES
        for kind in set(kinds).difference(names):
            names[kind] = sys.intern(kind.decode())
        index.kinds += map(names.__getitem__, kinds)


def _parsed(index: FileIndex, line: bytes, fd: int, offset: int) -> bool:
    """A line parsed in full: the header (not an entry), an entry (True), or nothing to index."""
    record = _parse(line, fd, offset, index.path, warn=index.header is not None)
    if record is None:
        if index.header is None and line.strip():
            index.early_unreadable.append(offset)
        return False
    if index.as_written and orjson.dumps(record) != line:
        index.as_written = False
    if index.header is None:
        if not is_header(record):
            raise _NotASession
        index.header = record
        for early in index.early_unreadable:
            _warn(_line_number(fd, early), index.path)
        return False
    if record.get("type") == "session":
        return False
    index.parsed[len(index.ids)] = record
    index.ids.append(record.get("id"))
    index.parents.append(record.get("parentId"))
    index.kinds.append(record.get("type"))
    return True


def _check_leaves(index: FileIndex, fd: int) -> None:
    """Parse the entries no one names as parent; drop (with a warning) those whose line is broken."""
    broken = []
    for position in _leaves(index.ids, index.parents):
        if position not in index.parsed:
            start = index.starts[position]
            try:
                record = orjson.loads(os.pread(fd, index.ends[position] - start, start))
            except orjson.JSONDecodeError:
                record = None
            if not isinstance(record, dict):
                _warn(_line_number(fd, start), index.path)
                broken.append(position)
    if broken:
        _drop(index, broken)


def _leaves(ids: list[object], parents: list[object]) -> list[int]:
    """Positions of the entries whose id no entry names as parent, in file order. There are usually a
    handful, each found by ``list.index`` (C speed); many are found by one pass instead."""
    named = set(parents)
    if len(ids) - len(named) > _FEW_LEAVES:
        return [position for position, entry_id in enumerate(ids) if entry_id not in named]
    leaves = []
    for entry_id in set(ids).difference(named):
        position = -1
        with suppress(ValueError):
            while True:  # an id used twice: every position
                position = ids.index(entry_id, position + 1)
                leaves.append(position)
    return sorted(leaves)


def _line_number(fd: int, offset: int) -> int:
    count, done = 1, 0
    while done < offset:
        block = os.pread(fd, min(_BLOCK_BYTES, offset - done), done)
        count += block.count(b"\n")
        done += len(block)
    return count


def _drop(index: FileIndex, positions: list[int]) -> None:
    gone = set(positions)
    kept = [position for position in range(len(index.ids)) if position not in gone]
    index.starts = array("q", (index.starts[p] for p in kept))
    index.ends = array("q", (index.ends[p] for p in kept))
    index.ids = [index.ids[p] for p in kept]
    index.parents = [index.parents[p] for p in kept]
    index.kinds = [index.kinds[p] for p in kept]
    index.parsed = {new: index.parsed[old] for new, old in enumerate(kept) if old in index.parsed}


def _parse(line: bytes, fd: int, offset: int, path: Path, warn: bool = True) -> Entry | None:
    """A whole record, or None for a blank line or (with a warning) an unreadable one."""
    try:
        record = orjson.loads(line)
    except orjson.JSONDecodeError:
        if not line.strip():
            return None
        record = None
    if isinstance(record, dict):
        return record
    if warn:
        _warn(_line_number(fd, offset), path)
    return None


def _warn(number: int, path: Path) -> None:
    sys.stderr.write(f"Warning: skipping unreadable line {number} of session file {path}\n")
