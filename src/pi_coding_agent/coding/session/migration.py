"""Bringing v1/v2 session files to the current format (version 3).

Migration happens in memory on load. The file itself is only rewritten by ``migrate_file`` (the
store calls it before its first append to an old file, since new entries must reference the
migrated ids): the original bytes are kept as ``<file>.bak`` and the new content replaces the file
atomically.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pi_coding_agent.coding.session.ids import new_entry_id
from pi_coding_agent.coding.session.storage import encode_all, is_header, read_records, replace_file

CURRENT_VERSION = 3


def needs_migration(header: dict[str, Any]) -> bool:
    version = header.get("version", 1)
    return not isinstance(version, int) or version < CURRENT_VERSION


def migrate_records(records: list[dict[str, Any]]) -> bool:
    """Migrate header + entries in place; True when anything changed."""
    header = next((r for r in records if r.get("type") == "session"), None)
    if header is None or not needs_migration(header):
        return False
    version = header.get("version", 1)
    if not isinstance(version, int) or version < 2:
        _v1_to_v2(records)
    _v2_to_v3(records)
    header["version"] = CURRENT_VERSION
    return True


def _v1_to_v2(records: list[dict[str, Any]]) -> None:
    """v1 files were a flat list: chain the entries and turn compaction indexes into ids."""
    taken: set[str] = set()
    previous: str | None = None
    for record in records:
        if record.get("type") == "session":
            continue
        record["id"] = new_entry_id(taken)
        taken.add(record["id"])
        record["parentId"] = previous
        previous = record["id"]
    for record in records:
        if record.get("type") != "compaction" or "firstKeptEntryIndex" not in record:
            continue
        index = record.pop("firstKeptEntryIndex")  # an index into the record list, header included
        if isinstance(index, int) and 0 <= index < len(records) and records[index].get("type") != "session":
            record["firstKeptEntryId"] = records[index]["id"]


def _v2_to_v3(records: list[dict[str, Any]]) -> None:
    """The message role ``hookMessage`` became ``custom``."""
    for record in records:
        message = record.get("message") if record.get("type") == "message" else None
        if isinstance(message, dict) and message.get("role") == "hookMessage":
            message["role"] = "custom"


def write_migrated(path: Path, records: list[dict[str, Any]]) -> None:
    """Keep the original as ``<file>.bak``, then atomically replace the file with ``records``."""
    import shutil  # only migrations need it (its import pulls in the compression modules)

    shutil.copyfile(path, path.with_name(path.name + ".bak"))
    replace_file(path, encode_all(records))


def migrate_file(path: Path) -> Path:
    """Rewrite an old-format session file in the current format (no-op when already current)."""
    records = read_records(path)
    if records and is_header(records[0]) and migrate_records(records):
        write_migrated(path, records)
    return path
