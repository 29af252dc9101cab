"""TypeScript extension files at a path of their content, so jiti compiles each source once.

jiti (in our sidecar and in the reference pi) keeps each compiled file in its cache under a hash of
the file's path, checked against its source: an ``ext.ts`` written into a fresh temporary folder
misses that cache on every run and pays for loading Babel and compiling again. Written once under a
folder named by the hash of its source, the same extension hits the cache in every later run, of
either side, in any worker or pytest session.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from pi_coding_agent.ai.atomic_file import write_atomic

STABLE_ROOT = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pi-coding-agent-python-tests" / "ts"


def stable_source(relative: str, source: str) -> Path:
    """``relative`` (e.g. ``ours-ext/ext.ts``) holding ``source``, under a folder named by both.

    Concurrent writers of one file write the same bytes, each replacing it whole (``write_atomic``).
    """
    digest = hashlib.sha256(f"{relative}\0{source}".encode()).hexdigest()[:20]
    path = STABLE_ROOT / digest / relative
    if path.is_file() and path.read_text() == source:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, source.encode())
    return path
