"""``Any`` per 1,000 lines of each layer (ai, agent, coding): how much of the code mypy checks loosely.

Usage: ``python scripts/any_density.py [package root]`` (default ``src/pi_coding_agent``).
Counts the word ``Any`` (imports included) over all lines of every ``.py`` file of a layer.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

LAYERS = ("ai", "agent", "coding")
ANY = re.compile(r"\bAny\b")


def density(layer: Path) -> tuple[int, int]:
    """(lines, ``Any`` occurrences) over the layer's Python files."""
    lines = hits = 0
    for path in layer.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        lines += text.count("\n")
        hits += len(ANY.findall(text))
    return lines, hits


def main() -> None:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "src/pi_coding_agent")
    for name in LAYERS:
        lines, hits = density(root / name)
        print(f"{name:<7} {lines:>6} lines {hits:>5} Any {1000 * hits / max(lines, 1):5.1f} per 1000")


if __name__ == "__main__":
    main()
