"""``<agentDir>/models-store.json``: the model lists providers keep between runs, as pi keeps them.

One JSON object keyed by provider id; each entry is pi's ``ModelsStoreEntry``: ``models`` (full model
objects of every type) and optionally ``checkedAt``, ``lastModified`` (ms) and ``etag``, two-space JSON
without a trailing newline, mode 0600 when created. Writes are read-modify-write under pi's lock
(``<realpath>.lock``, the auth.json convention), so entries another process wrote meanwhile stay.

Where we do better than pi (``docs/rpc.md``): a write goes to a temporary file that replaces the
store, so a crash mid-write leaves the old file whole; a file that is not a JSON object is moved
aside to ``models-store.json.corrupt-<ms>`` (kept, never overwritten) before a new one is written,
instead of failing every refresh; an entry without a ``models`` list counts as no snapshot.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import orjson

from pi_coding_agent.ai.atomic_file import write_atomic
from pi_coding_agent.ai.types import JsonObject, now_ms

STORE_NAME = "models-store.json"
KNOWN_TYPES = ("chat", "image", "classifier")  # model types pi 1.6.0 hands back from a snapshot
Entry = dict[str, Any]
_warned: set[Path] = set()  # broken stores already reported by this process


def store_path(agent_dir: Path) -> Path:
    return Path(agent_dir) / STORE_NAME


def _read_all(path: Path) -> JsonObject:
    """The store's content; a missing or empty file is ``{}``. ValueError (its text says what is
    wrong) when it is not a JSON object."""
    try:
        raw = path.read_bytes().removeprefix(b"\xef\xbb\xbf")
    except FileNotFoundError:
        return {}
    data = orjson.loads(raw) if raw.strip() else {}  # a JSONDecodeError is a ValueError
    if not isinstance(data, dict):
        raise ValueError("expected an object")
    return data


def _problem(exc: Exception) -> str:
    return f"invalid JSON ({exc})" if isinstance(exc, orjson.JSONDecodeError) else str(exc)


def read_entry(agent_dir: Path, provider: str) -> Entry | None:
    """The provider's snapshot with the models of known types, or None when there is none.

    A missing file is no snapshot; an unreadable or broken one is reported on stderr once and counts
    as empty (pi fails the provider's refresh instead).
    """
    path = store_path(agent_dir)
    try:
        data = _read_all(path)
    except (OSError, ValueError) as exc:
        _warn(path, _problem(exc))
        return None
    entry = data.get(provider)
    if not isinstance(entry, dict) or not isinstance(entry.get("models"), list):
        return None
    models = [m for m in entry["models"] if isinstance(m, dict) and m.get("type", "chat") in KNOWN_TYPES]
    return {**entry, "models": models}


def _warn(path: Path, problem: str) -> None:
    if path not in _warned:
        _warned.add(path)
        print(f"Warning: {path}: {problem}; its model snapshots are ignored", file=sys.stderr)


async def write_entry(agent_dir: Path, provider: str, entry: Entry | None) -> None:
    """Replace (``entry``) or delete (None) the provider's snapshot; other entries are kept."""
    from pi_coding_agent.ai.auth.oauth.lock import auth_file_lock

    path = store_path(agent_dir)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    async with auth_file_lock(path):
        try:
            data = _read_all(path)
        except ValueError as exc:
            aside = path.with_name(f"{STORE_NAME}.corrupt-{now_ms()}")
            os.replace(path, aside)
            print(f"Warning: {path}: {_problem(exc)}; kept as {aside.name}, a new store is started",
                  file=sys.stderr)
            _warned.discard(path)
            data = {}
        if entry is None:
            if provider not in data:
                return
            del data[provider]
        else:
            data[provider] = entry
        _replace(path, orjson.dumps(data, option=orjson.OPT_INDENT_2))


def _replace(path: Path, content: bytes) -> None:
    """Write ``content`` whole or not at all, through a symlink to its target, keeping the target's
    mode; 0600 for a new file as pi creates it."""
    write_atomic(path, content, 0o600)
