"""JSON for ``get_tree`` results without recursion.

A linear session nests one level per entry, and orjson refuses nesting deeper than 255 (JSON.stringify
overflows its stack a little later), so ``get_tree`` of any long session needs an iterative encoder.
Wrap the result in ``orjson.Fragment`` to embed it in a response record.
"""

from __future__ import annotations

from typing import Any

import orjson


def _joined(nodes: list[dict[str, Any]]) -> list[Any]:
    """Nodes separated by commas, reversed, ready to be pushed on the work stack."""
    items: list[Any] = []
    for index, node in enumerate(nodes):
        if index:
            items.append(b",")
        items.append(node)
    items.reverse()
    return items


def encode_tree(roots: list[dict[str, Any]]) -> bytes:
    """Serialise ``[{entry, children, label?, labelTimestamp?}]`` exactly like ``orjson.dumps`` would."""
    dumps = orjson.dumps
    out: list[bytes] = [b"["]
    stack: list[Any] = [b"]", *_joined(roots)]
    while stack:
        item = stack.pop()
        if isinstance(item, bytes):
            out.append(item)
            continue
        tail = b"]"
        for key in ("label", "labelTimestamp"):
            if key in item:
                tail += b',"' + key.encode() + b'":' + dumps(item[key])
        stack.append(tail + b"}")
        stack.extend(_joined(item["children"]))
        out.append(b'{"entry":' + dumps(item["entry"]) + b',"children":[')
    return b"".join(out)
