"""pi's short deterministic string hash, for ids that must come out as pi makes them.

Replayed tool call and message ids that are too long or foreign are shortened with it, so the
same transcript gives the same request on both. Two 32-bit lanes over the UTF-16 code units, each
mixed at the end, printed in base 36 (high lane first).
"""

from __future__ import annotations

MASK = 0xFFFFFFFF
DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"


def _mul(a: int, b: int) -> int:
    return (a * b) & MASK


def _base36(value: int) -> str:
    out = ""
    while True:
        value, digit = divmod(value, 36)
        out = DIGITS[digit] + out
        if not value:
            return out


def short_hash(text: str) -> str:
    h1, h2 = 0xDEADBEEF, 0x41C6CE57
    units = text.encode("utf-16-le")
    for index in range(0, len(units), 2):
        unit = units[index] | units[index + 1] << 8
        h1 = _mul(h1 ^ unit, 2654435761)
        h2 = _mul(h2 ^ unit, 1597334677)
    h1 = _mul(h1 ^ (h1 >> 16), 2246822507) ^ _mul(h2 ^ (h2 >> 13), 3266489909)
    h2 = _mul(h2 ^ (h2 >> 16), 2246822507) ^ _mul(h1 ^ (h1 >> 13), 3266489909)
    return _base36(h2) + _base36(h1)
