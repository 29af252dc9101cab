"""Identifiers and timestamps of session files: UUIDv7 session ids, 8-hex entry ids, ISO times."""

from __future__ import annotations

import os
import re
import time
import uuid
from collections.abc import Container
from datetime import UTC, datetime

_SESSION_ID_RE = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$")
SESSION_ID_ERROR = (
    "Session id must be non-empty, contain only alphanumeric characters, '-', '_', and '.', "
    "and start and end with an alphanumeric character"
)


_last_uuid7 = [0, 0]  # epoch ms and 12-bit counter of the previous id


def uuid7() -> str:
    """A time-ordered UUID (RFC 9562 version 7): 48-bit epoch ms, a 12-bit counter, 62 random bits.

    Ids made within one millisecond increase (RFC 9562 method 1), so session files created in the
    same millisecond still sort in creation order by name.
    """
    ms = time.time_ns() // 1_000_000
    last_ms, counter = _last_uuid7
    if ms <= last_ms:
        ms, counter = last_ms, counter + 1
        if counter > 0xFFF:
            ms, counter = ms + 1, 0
    else:
        counter = int.from_bytes(os.urandom(2), "big") & 0x7FF  # leave room to count up
    _last_uuid7[:] = [ms, counter]
    rand_b = int.from_bytes(os.urandom(8), "big") & ((1 << 62) - 1)
    value = (ms & ((1 << 48) - 1)) << 80 | 0x7 << 76 | counter << 64 | 0x2 << 62 | rand_b
    return str(uuid.UUID(int=value))


def validate_session_id(session_id: str) -> None:
    """Reject caller-supplied ids that could not be part of a file name."""
    if not _SESSION_ID_RE.match(session_id):
        raise ValueError(SESSION_ID_ERROR)


def new_entry_id(taken: Container[str]) -> str:
    """8 hex digits not used by another entry of the file (a full UUID after 100 collisions)."""
    for _ in range(100):
        candidate = os.urandom(4).hex()
        if candidate not in taken:
            return candidate
    return str(uuid.uuid4())


def iso_now() -> str:
    """Current UTC time the way entries store it: ``2026-11-30T05:43:27.760Z``."""
    return iso_from_ms(time.time_ns() // 1_000_000)


def iso_from_ms(ms: int) -> str:
    moment = datetime.fromtimestamp(ms / 1000, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def iso_to_ms(value: object) -> int | None:
    """Epoch ms of an ISO timestamp; None (JSON null, like JavaScript's NaN) when unparseable."""
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return round(moment.timestamp() * 1000)


def file_stamp(iso: str) -> str:
    """The header timestamp as it appears in a session file name (':' and '.' become '-')."""
    return iso.replace(":", "-").replace(".", "-")
