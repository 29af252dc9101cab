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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from pi_coding_agent.coding.session.entries import Entry
from pi_coding_agent.coding.session.storage import is_header

_PREFIX = re.compile(rb'\{"type":"([A-Za-z0-9_]+)","id":"([^"\\]*)","parentId":(?:null|"([^"\\]*)")[,}]')
_PARSED_KINDS = frozenset({b"label", b"session_info", b"compaction"})
_BLOCK_BYTES = 4 << 20
_KIND_NAMES: dict[bytes, str] = {}  # entry types as read, decoded once


@dataclass
class FileIndex:
    """Per entry position: its line's byte range, id, parent id and type; plus the header."""

    path: Path
    header: Entry | None = None
    starts: array[int] = field(default_factory=lambda: array("q"))
    ends: array[int] = field(default_factory=lambda: array("q"))
    ids: list[Any] = field(default_factory=list)
    parents: list[Any] = field(default_factory=list)
    kinds: list[Any] = field(default_factory=list)
    parsed: dict[int, Entry] = field(default_factory=dict)  # position -> entry parsed during the pass


def index_file(path: Path) -> FileIndex:
    """Index every entry of ``path``; ``header`` is None when the first readable record is not one."""
    index = FileIndex(path)
    with path.open("rb") as handle:
        try:
            _scan(index, handle)
        except _NotASession:
            return FileIndex(path)
        if index.header is not None:
            _check_leaves(index, handle.fileno())
    return index


class _NotASession(Exception):
    """The first readable record is not a session header."""


def _scan(index: FileIndex, handle: BinaryIO) -> None:
    """Every line, found in large blocks with ``find`` and matched in place: no per-line copy, and
    much cheaper than iterating the file object when lines are long."""
    match, kind_names = _PREFIX.match, _KIND_NAMES
    add_start, add_end = index.starts.append, index.ends.append
    add_id, add_parent, add_kind = index.ids.append, index.parents.append, index.kinds.append
    number, base, block, more = 0, 0, b"", b"x"
    while more:
        more = handle.read(_BLOCK_BYTES)
        block += more
        position = 0
        while (end := block.find(b"\n", position)) >= 0 or (not more and position < len(block)):
            end = len(block) if end < 0 else end  # the last line has no newline
            number += 1
            found = match(block, position, end) if index.header is not None else None
            if found is not None and found[1] not in _PARSED_KINDS:
                parent = found[3]
                kind = found[1]
                add_id(found[2].decode())
                add_parent(None if parent is None else parent.decode())
                add_kind(kind_names.get(kind) or kind_names.setdefault(kind, sys.intern(kind.decode())))
            elif not _parsed(index, block[position:end], number):
                position = end + 1
                continue
            add_start(base + position)
            add_end(base + end)
            position = end + 1
        block, base = block[position:], base + position


def _parsed(index: FileIndex, line: bytes, number: int) -> bool:
    """A line parsed in full: the header (not an entry), an entry (True), or nothing to index."""
    record = _parse(line, number, index.path)
    if record is None:
        return False
    if index.header is None:
        if not is_header(record):
            raise _NotASession
        index.header = record
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
    named = set(index.parents)
    broken = []
    for position, entry_id in enumerate(index.ids):
        if entry_id not in named and position not in index.parsed:
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


def _parse(line: bytes, number: int, path: Path) -> Entry | None:
    """A whole record, or None for a blank line or (with a warning) an unreadable one."""
    try:
        record = orjson.loads(line)
    except orjson.JSONDecodeError:
        if not line.strip():
            return None
        record = None
    if isinstance(record, dict):
        return record
    _warn(number, path)
    return None


def _warn(number: int, path: Path) -> None:
    sys.stderr.write(f"Warning: skipping unreadable line {number} of session file {path}\n")
