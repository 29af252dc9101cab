"""auth.json as pi writes it: one object keyed by provider id, two-space JSON, mode 0600.

Every write is a read-modify-write under pi's lock (``lock.auth_file_lock``) that starts from the
file's current content, never from a copy read earlier, so a credential another process refreshed
or added meanwhile is kept.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson

from pi_coding_agent.ai.atomic_file import create_new, write_atomic
from pi_coding_agent.ai.auth.oauth.lock import auth_file_lock
from pi_coding_agent.ai.types import JsonObject

Credential = JsonObject
Modifier = Callable[[Credential | None], Awaitable[Credential | None]]


def parse(raw: bytes) -> JsonObject:
    """auth.json content as a dict; an empty file is ``{}``; anything but an object raises ValueError."""
    raw = raw.removeprefix(b"\xef\xbb\xbf")
    if not raw.strip():
        return {}
    data = orjson.loads(raw)
    if not isinstance(data, dict):
        raise ValueError("Invalid auth.json: expected an object")
    return data


def is_oauth(credential: object) -> bool:
    """A well-formed OAuth entry, as pi validates it (access, refresh, finite expires)."""
    return (isinstance(credential, dict) and credential.get("type") == "oauth"
            and isinstance(credential.get("access"), str) and isinstance(credential.get("refresh"), str)
            and isinstance(credential.get("expires"), int | float) and not isinstance(credential.get("expires"), bool))


def serialize(data: JsonObject) -> bytes:
    """pi's ``JSON.stringify(data, null, 2)`` (orjson keeps insertion order and the same layout)."""
    return orjson.dumps(data, option=orjson.OPT_INDENT_2)


class CredentialFile:
    """Locked access to one auth.json."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"CredentialFile({str(self.path)!r})"

    def ensure(self) -> None:
        """Create the directory (0700) and an empty ``{}`` file (0600) when missing, as pi does."""
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        create_new(self.path, b"{}", 0o600)

    def read_all(self) -> dict[str, Any]:
        """The current content without locking (readers never block writers); missing is ``{}``."""
        try:
            return parse(self.path.read_bytes())
        except FileNotFoundError:
            return {}

    def _write(self, data: JsonObject) -> None:
        # Whole or not at all (a full disk must not leave every credential truncated), through a
        # symlinked alias to its target, keeping its mode; 0600 on creation as pi.
        write_atomic(self.path, serialize(data), 0o600)

    async def modify(self, provider: str, fn: Modifier) -> Credential | None:
        """Replace ``provider``'s entry with ``await fn(current)`` under the lock; None leaves it.

        Returns the entry stored afterwards.
        """
        self.ensure()
        async with auth_file_lock(self.path):
            data = self.read_all()
            current = data.get(provider)
            nxt = await fn(current if isinstance(current, dict) else None)
            if nxt is None:
                return current if isinstance(current, dict) else None
            data[provider] = nxt
            self._write(data)
            return nxt

    async def delete(self, provider: str) -> bool:
        """Remove ``provider``'s entry; whether there was one."""
        self.ensure()
        async with auth_file_lock(self.path):
            data = self.read_all()
            if provider not in data:
                return False
            del data[provider]
            self._write(data)
            return True
