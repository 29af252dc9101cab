"""One writer at a time per real file: edit and write on the same path never interleave."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

_locks: dict[str, tuple[asyncio.Lock, int]] = {}


def _key(path: str) -> str:
    """The symlink-resolved path (the plain absolute path while the file does not exist yet)."""
    return os.path.realpath(path)


@asynccontextmanager
async def file_mutation_lock(path: str) -> AsyncIterator[None]:
    key = _key(path)
    lock, users = _locks.get(key) or (asyncio.Lock(), 0)
    _locks[key] = (lock, users + 1)
    try:
        async with lock:
            yield
    finally:
        lock, users = _locks[key]
        if users <= 1:
            del _locks[key]
        else:
            _locks[key] = (lock, users - 1)
