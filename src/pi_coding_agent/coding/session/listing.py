"""Where session files live and how to find them: directory naming, discovery, picker metadata."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson

from pi_coding_agent.coding import paths
from pi_coding_agent.coding.session.context import content_text
from pi_coding_agent.coding.session.ids import iso_from_ms, iso_to_ms
from pi_coding_agent.coding.session.storage import read_header


def session_dir_for(agent_dir: Path, cwd: Path) -> Path:
    """The default session directory of a working directory (naming lives in ``coding/paths``)."""
    return paths.default_session_dir(agent_dir, cwd)


def is_custom_dir(session_dir: Path, cwd: Path) -> bool:
    """Sessions of a custom directory are filtered by the cwd recorded in their header."""
    return Path(session_dir).resolve() != session_dir_for(paths.agent_dir(), cwd)


def _cwd_matches(header: dict[str, Any], cwd: Path) -> bool:
    recorded = header.get("cwd")
    return isinstance(recorded, str) and recorded != "" and os.path.abspath(recorded) == os.path.abspath(cwd)


def _session_entries(session_dir: Path) -> list[os.DirEntry[str]]:
    """The directory's ``.jsonl`` entries (none when it cannot be listed)."""
    try:
        with os.scandir(session_dir) as entries:  # cheaper than Path.iterdir and Path.stat
            return [entry for entry in entries if entry.name.endswith(".jsonl")]
    except OSError:
        return []


def _session_files(session_dir: Path) -> list[Path]:
    return [Path(entry.path) for entry in _session_entries(session_dir)]


def files_newest_first(session_dir: Path) -> list[str]:
    """The session files of a directory, last written first (one ``stat`` each, no file read): a
    picker reads the files it shows first and the rest later. Paths as strings: making a ``Path`` of
    each cost more than listing and ``stat`` together."""
    stamped = []
    for entry in _session_entries(session_dir):
        try:
            stamped.append((entry.stat().st_mtime_ns, entry.path))
        except OSError:
            continue
    stamped.sort(reverse=True)
    return [path for _, path in stamped]


def find_most_recent(session_dir: Path, cwd: Path | None) -> Path | None:
    """The most recently modified session file (whose header cwd matches ``cwd`` when given)."""
    for name in files_newest_first(session_dir):
        path = Path(name)
        header = read_header(path)
        if header is not None and (cwd is None or _cwd_matches(header, cwd)):
            return path
    return None


def session_info(path: Path) -> dict[str, Any] | None:
    """Picker metadata of one file (None when it is not a session)."""
    try:
        with path.open("rb") as handle:
            mtime_ms = int(os.fstat(handle.fileno()).st_mtime * 1000)
            return _summarise(path, handle, mtime_ms)
    except OSError:
        return None


def _summarise(path: Path, lines: Iterable[bytes], mtime_ms: int) -> dict[str, Any] | None:
    header: dict[str, Any] | None = None
    name = None
    count = 0
    first = ""
    texts: list[str] = []
    last_activity = 0
    for line in lines:
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if not isinstance(record, dict):
            continue
        if header is None:
            if record.get("type") != "session":
                return None
            header = record
            continue
        if record.get("type") == "session_info":
            name = str(record.get("name") or "").strip() or None
        if record.get("type") != "message":
            continue
        count += 1
        message = record.get("message")
        if not isinstance(message, dict) or "content" not in message:
            continue
        if message.get("role") not in ("user", "assistant"):
            continue
        stamp = message.get("timestamp")
        stamp = stamp if isinstance(stamp, int | float) else iso_to_ms(record.get("timestamp"))
        if stamp:
            last_activity = max(last_activity, int(stamp))
        text = content_text(message["content"], " ")
        if text:
            texts.append(text)
            if not first and message.get("role") == "user":
                first = text
    if header is None:
        return None
    created_ms = iso_to_ms(header.get("timestamp"))
    modified_ms = last_activity or created_ms or mtime_ms
    info: dict[str, Any] = {"path": str(path), "id": header.get("id"),
                            "cwd": header.get("cwd") if isinstance(header.get("cwd"), str) else ""}
    if name is not None:
        info["name"] = name
    if header.get("parentSession") is not None:
        info["parentSessionPath"] = header["parentSession"]
    info.update(created=header.get("timestamp"), modified=iso_from_ms(modified_ms), messageCount=count,
                firstMessage=first or "(no messages)", allMessagesText=" ".join(texts))
    return info


def list_sessions(session_dir: Path, cwd: Path | None = None) -> list[dict[str, Any]]:
    """Metadata of every session in a directory, newest activity first (filtered by cwd if given)."""
    infos = [info for path in _session_files(session_dir) if (info := session_info(path)) is not None]
    if cwd is not None:
        infos = [info for info in infos if info["cwd"] and os.path.abspath(info["cwd"]) == os.path.abspath(cwd)]
    infos.sort(key=lambda info: info["modified"], reverse=True)
    return infos
