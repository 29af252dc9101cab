"""Byte-level I/O of session files: tolerant reading, locked single-write appends, safe rewrites.

Every line is written with one ``os.write`` on an ``O_APPEND`` descriptor while holding an
advisory ``flock``, so writers in several processes never interleave partial lines. A file left
ending in a partial line (crash, full disk) keeps every complete entry; the next append starts
with the missing newline, in the same write.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson

try:
    import fcntl
except ImportError:  # pragma: no cover - non-POSIX
    fcntl = None  # type: ignore[assignment]

HEADER_SCAN_LIMIT = 1024 * 1024


def encode(record: dict[str, Any]) -> bytes:
    """One JSONL line (orjson: UTF-8, no spaces, like JavaScript's JSON.stringify)."""
    return orjson.dumps(record) + b"\n"


def encode_all(records: Iterable[dict[str, Any]]) -> bytes:
    return b"".join(map(encode, records))


def parse_lines(lines: Iterable[bytes], path: Path | str) -> list[dict[str, Any]]:
    """Parse JSONL lines (split on LF only); blank lines are skipped, unreadable ones reported on stderr."""
    records: list[dict[str, Any]] = []
    loads = orjson.loads
    for number, line in enumerate(lines, 1):
        try:
            record = loads(line)
        except orjson.JSONDecodeError:
            if not line.strip():
                continue
            record = None
        if isinstance(record, dict):
            records.append(record)
        else:
            sys.stderr.write(f"Warning: skipping unreadable line {number} of session file {path}\n")
    return records


def read_records(path: Path) -> list[dict[str, Any]]:
    """All parseable records of a file, in file order ([] when the file does not exist).

    Lines are read one at a time (binary iteration splits on b"\\n" only), so the peak memory is
    the parsed entries, not the file bytes as well.
    """
    try:
        with path.open("rb") as handle:
            return parse_lines(handle, path)
    except FileNotFoundError:
        return []


def read_header(path: Path) -> dict[str, Any] | None:
    """The header of a session file from its first parseable line, reading at most 1 MiB.

    Best effort for discovery: unreadable files and files that do not start with a header are
    not sessions (None).
    """
    try:
        with path.open("rb") as handle:
            head = handle.read(HEADER_SCAN_LIMIT)
    except OSError:
        return None
    for line in head.split(b"\n"):
        if not line.strip():
            continue
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        return record if is_header(record) else None
    return None


def is_header(record: object) -> bool:
    return isinstance(record, dict) and record.get("type") == "session" and isinstance(record.get("id"), str)


def _lock(fd: int) -> None:
    if fcntl is not None:
        fcntl.flock(fd, fcntl.LOCK_EX)


def _write_all(fd: int, data: bytes) -> None:
    """Write every byte; after a short write (a full disk) the next write raises the real error."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def append_line(path: Path, line: bytes) -> int:
    """Append one complete line, preceded by a newline if the file ends in a partial line; returns
    the offset the line starts at. A failed write (a full disk) is cut off again, so the file still
    ends where it did."""
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CLOEXEC)
    try:
        _lock(fd)  # released by close
        size = os.fstat(fd).st_size
        newline = b"\n" if size and os.pread(fd, 1, size - 1) != b"\n" else b""
        try:
            _write_all(fd, newline + line)
        except OSError:
            os.ftruncate(fd, size)
            raise
        return size + len(newline)
    finally:
        os.close(fd)


def create_file(path: Path, data: bytes | Iterable[bytes]) -> None:
    """Create a new file holding ``data`` (or its pieces, in order; exclusive: never clobbers); removed
    again on failure."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    try:
        _lock(fd)
        for piece in [data] if isinstance(data, bytes) else data:
            _write_all(fd, piece)
    except BaseException:
        os.close(fd)
        path.unlink(missing_ok=True)
        raise
    os.close(fd)


def replace_file(path: Path, data: bytes | Iterable[bytes]) -> None:
    """Atomically replace (or create) a file with ``data`` or its pieces: temp file beside it, fsync,
    rename."""
    from pi_coding_agent.ai.atomic_file import write_atomic

    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, data)
