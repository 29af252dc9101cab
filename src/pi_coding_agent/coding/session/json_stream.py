"""Large session results as JSON chunks: the tree without recursion, entry lists without a copy.

A linear session nests one ``get_tree`` level per entry, and orjson refuses nesting deeper than 255
(JSON.stringify overflows its stack a little later), so the tree is written by an explicit stack.
Both writers read one entry at a time from the store and yield chunks of about ``CHUNK_BYTES``, so
a response over a 300 MB session never exists whole in memory. The bytes are exactly what
``orjson.dumps`` would give for the whole value.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.session.entry_list import EntryList
from pi_coding_agent.coding.session.ids import iso_to_ms

CHUNK_BYTES = 256 << 10

Layout = tuple[list[int], dict[int, list[int]]]  # root positions; children positions of each position


def tree_layout(entries: EntryList, by_id: dict[Any, int]) -> Layout:
    """The shape of ``get_tree`` as entry positions: orphans are roots, siblings sorted by time.

    An id used twice names its last entry, as a lookup by id does.
    """
    roots: list[int] = []
    children: dict[int, list[int]] = {}
    for entry_id, parent_id in zip(entries.ids(), entries.parents(), strict=True):
        parent = by_id.get(parent_id) if parent_id is not None and parent_id != entry_id else None
        (roots if parent is None else children.setdefault(parent, [])).append(by_id[entry_id])
    with entries.reading():
        for siblings in children.values():
            if len(siblings) > 1:
                siblings.sort(key=lambda position: _entry_time(entries[position]))
    return roots, children


def _entry_time(entry: JsonObject) -> float:
    """Sort key of tree siblings: entry time (unparseable times sort as equal, first)."""
    stamp = iso_to_ms(entry.get("timestamp"))
    return float("-inf") if stamp is None else stamp


def label_fields(label: JsonObject | None) -> JsonObject:
    """A node's ``label`` and ``labelTimestamp`` (absent when unset)."""
    if label is None:
        return {}
    fields = {"label": label["label"]}
    if label["timestamp"] is not None:
        fields["labelTimestamp"] = label["timestamp"]
    return fields


def iter_tree(entries: EntryList, layout: Layout, labels: dict[Any, JsonObject]) -> Iterator[bytes]:
    """``[{entry, children, label?, labelTimestamp?}, ...]`` in chunks, depth first."""
    roots, children = layout
    dumps = orjson.dumps
    stack: list[Any] = [b"]", *_joined(roots)]
    with entries.reading():
        yield from _chunked(_tree_pieces(entries, stack, children, labels, dumps), b"[")


def _tree_pieces(entries: EntryList, stack: list[Any], children: dict[int, list[int]],
                 labels: dict[Any, JsonObject], dumps: Any) -> Iterator[bytes]:
    while stack:
        item = stack.pop()
        if isinstance(item, bytes):
            yield item
            continue
        tail = b"]"
        for key, value in label_fields(labels.get(entries.entry_id(item))).items():
            tail += b',"' + key.encode() + b'":' + dumps(value)
        stack.append(tail + b"}")
        stack.extend(_joined(children.get(item, ())))
        yield b'{"entry":' + entries.json_at(item) + b',"children":['


def _joined(positions: Iterable[int]) -> list[Any]:
    """Positions separated by commas, reversed, ready to be pushed on the work stack."""
    items: list[Any] = []
    for index, position in enumerate(positions):
        if index:
            items.append(b",")
        items.append(position)
    items.reverse()
    return items


def iter_array(items: Iterable[bytes]) -> Iterator[bytes]:
    """A JSON array of already-serialised values, in chunks."""
    def pieces() -> Iterator[bytes]:
        for index, item in enumerate(items):
            yield b"," + item if index else item
        yield b"]"

    return _chunked(pieces(), b"[")


def _chunked(pieces: Iterable[bytes], first: bytes) -> Iterator[bytes]:
    buffer = [first]
    size = len(first)
    for piece in pieces:
        buffer.append(piece)
        size += len(piece)
        if size >= CHUNK_BYTES:
            yield b"".join(buffer)
            buffer.clear()
            size = 0
    yield b"".join(buffer)
