"""Growing a streamed block's text without copying it on every delta."""

from __future__ import annotations

from typing import Any


def append_text(holder: dict[Any, Any], key: Any, piece: str) -> None:
    """``holder[key] += piece`` in amortised constant time.

    The plain form copies the whole text so far on each delta (the dict holds a second reference,
    so the string cannot grow in place): quadratic in the length of a reply. With the dict's
    reference dropped first, CPython extends the string in place when nobody else holds it.
    """
    text = holder[key]
    holder[key] = ""
    text += piece
    holder[key] = text
