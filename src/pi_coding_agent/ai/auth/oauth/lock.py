"""The auth.json lock, shared with pi's processes.

pi serializes every auth.json write with ``proper-lockfile``: the lock is the directory
``<realpath of auth.json>.lock``, created with ``mkdir`` (atomic on every filesystem pi runs on) and
removed on release; a holder keeps its mtime fresh, and a lock whose mtime is older than the stale
limit belongs to a dead process and may be taken over. Speaking the same convention is what lets
ours and pi's processes refresh one OAuth credential without either losing the rotated refresh token.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import time
from collections.abc import AsyncIterator
from pathlib import Path

# pi's async lock treats a lock untouched for 30 s as stale; its synchronous reload path uses
# proper-lockfile's default of 10 s, so a holder must touch the directory well within that.
STALE_S = 30.0
TOUCH_EVERY_S = 2.0
MAX_DELAY_S = 1.0


class LockTimeout(OSError):
    """Another process held the auth.json lock for longer than the stale limit."""


def lock_dir(path: Path) -> Path:
    """The lock directory pi uses for ``path`` (symlinked aliases of auth.json share one lock)."""
    return Path(os.path.realpath(path) + ".lock")


def _try_mkdir(lock: Path) -> bool:
    try:
        os.mkdir(lock)
    except FileExistsError:
        return False
    return True


def _remove_if_stale(lock: Path, stale_s: float) -> None:
    """Take over a lock its holder stopped touching (the holder died)."""
    try:
        if time.time() - lock.stat().st_mtime > stale_s:
            os.rmdir(lock)
    except OSError:
        pass  # released or taken meanwhile: the next mkdir decides


async def _touch(lock: Path) -> None:
    while True:
        await asyncio.sleep(TOUCH_EVERY_S)
        with contextlib.suppress(OSError):
            os.utime(lock)


@contextlib.asynccontextmanager
async def auth_file_lock(path: Path, timeout_s: float = STALE_S, stale_s: float = STALE_S) -> AsyncIterator[None]:
    """Hold pi's auth.json lock for ``path`` (which must exist) for the body of the block. ``stale_s``:
    how long a lock untouched counts as its holder's (pi's limit for the files pi shares; a lock of
    ours alone may be taken over sooner, as its holder touches it every ``TOUCH_EVERY_S``)."""
    lock = lock_dir(path)
    deadline = time.monotonic() + timeout_s
    attempt = 0
    while not _try_mkdir(lock):
        _remove_if_stale(lock, stale_s)
        if time.monotonic() > deadline:
            raise LockTimeout(f"auth.json is locked by another process ({lock})")
        delay = min(0.01 * 2**attempt, MAX_DELAY_S / 2) * (1 + random.random())
        attempt += 1
        await asyncio.sleep(delay)
    toucher = asyncio.create_task(_touch(lock))
    try:
        yield
    finally:
        toucher.cancel()
        with contextlib.suppress(OSError):
            os.rmdir(lock)
