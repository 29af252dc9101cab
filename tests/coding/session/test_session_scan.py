"""The index pass and the branch walk against plain references: a full parse of every line, and a walk
that follows one parent link at a time."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import orjson
import pytest

from pi_coding_agent.coding.session import file_index, storage
from pi_coding_agent.coding.session.entry_list import EntryList
from pi_coding_agent.coding.session.file_index import index_file

HEADER = {"type": "session", "version": 3, "id": "h", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/"}


def _entry(entry_id: Any, parent: Any, kind: str = "message", size: int = 10) -> dict[str, Any]:
    return {"type": kind, "id": entry_id, "parentId": parent, "timestamp": "2026-01-01T00:00:01.000Z",
            "message": {"role": "user", "content": "x" * size}}


def _naive_walk(entries: list[dict[str, Any]], position: int | None) -> list[int]:
    """One parent link per step: the last entry of an id wins; a missing parent or a repeat stops."""
    by_id = {entry["id"]: index for index, entry in enumerate(entries)}
    path: list[int] = []
    seen: set[Any] = set()
    while position is not None and entries[position]["id"] not in seen:
        path.append(position)
        seen.add(entries[position]["id"])
        parent = entries[position]["parentId"]
        position = by_id.get(parent) if parent is not None else None
    return path[::-1]


def _write(path: Path, lines: list[bytes]) -> None:
    path.write_bytes(b"\n".join([storage.encode(HEADER).rstrip(b"\n"), *lines]) + b"\n")


@pytest.mark.parametrize("seed", range(6))
def test_the_walk_matches_one_link_at_a_time(tmp_path: Path, seed: int) -> None:
    """Long linear runs, branches, links forward in the file, cycles, repeated and null ids."""
    rng = random.Random(seed)
    entries: list[dict[str, Any]] = []
    for number in range(400):
        entry_id: Any = f"e{number}"
        if seed >= 3 and rng.random() < 0.02:
            entry_id = rng.choice([None, f"e{rng.randrange(number + 1)}"])  # null or repeated
        choice = rng.random()
        if choice < 0.8 and entries:
            parent = entries[-1]["id"]
        elif choice < 0.9:
            parent = f"e{rng.randrange(number + 40)}"  # may lie ahead in the file, or be missing
        else:
            parent = None
        entries.append(_entry(entry_id, parent))
    path = tmp_path / "walk.jsonl"
    _write(path, [orjson.dumps(entry) for entry in entries])
    listed = EntryList.from_index(index_file(path))
    by_id = dict(zip(listed.ids(), range(len(listed)), strict=True))
    for position in [*range(0, len(entries), 7), len(entries) - 1]:
        assert listed.path_to(position, by_id) == _naive_walk(entries, position), position


def test_lines_across_blocks_and_longer_than_a_block(tmp_path: Path, monkeypatch: Any) -> None:
    """A small buffer: lines cut at every block edge, one line several blocks long, blank lines, a
    broken line in the middle and a last line without its newline index as a full parse does."""
    monkeypatch.setattr(file_index, "_BLOCK_BYTES", 256)
    entries = [_entry(f"e{n}", f"e{n - 1}" if n else None, size=(1500 if n == 7 else 3 * n)) for n in range(40)]
    entries.append(_entry("ünï", "e39"))  # not plain ASCII: parsed in full
    entries.append(_entry("lbl", "ünï", kind="label"))
    lines = [orjson.dumps(entry) for entry in entries]
    lines.insert(10, b"")
    lines.insert(20, b'{"type":"message","id":"cut","parentId":"e17","timest')
    path = tmp_path / "blocks.jsonl"
    path.write_bytes(b"\n".join([storage.encode(HEADER).rstrip(b"\n"), *lines]))
    index = index_file(path)
    records = storage.read_records(path)[1:]
    assert index.ids == [record["id"] for record in records]
    assert index.parents == [record["parentId"] for record in records]
    assert index.kinds == [record["type"] for record in records]
    data = path.read_bytes()
    assert [orjson.loads(data[start:end]) for start, end in zip(index.starts, index.ends, strict=True)] == records


@pytest.mark.parametrize("block", [None, 200])
def test_fork_messages_parse_only_the_lines_of_user_messages(tmp_path: Path, monkeypatch: Any,
                                                             block: int | None) -> None:
    """The first ``get_fork_messages`` of a file equals the full-parse answer; a line whose message
    starts with another role is never parsed, one in another key order is. (``block``: a read buffer
    smaller than most lines.)"""
    from pi_coding_agent.coding.session import SessionManager, entry_list
    from tests.support.fixtures.sessions.builders import assistant, user

    if block is not None:
        monkeypatch.setattr(entry_list, "_BLOCK_BYTES", block)

    sm = SessionManager.create(tmp_path, tmp_path / "s")
    for turn in range(5):
        sm.append_message(user(f"question {turn}"))
        sm.append_message(assistant(f"answer {turn}"))
    sm.append_message({"role": "user", "content": [{"type": "image", "data": "", "mimeType": "image/png"}]})
    assert sm.session_file is not None
    odd = {"type": "message", "id": "odd", "parentId": sm.leaf_id, "timestamp": "2026-01-01T00:00:09.000Z",
           "message": {"content": "role comes last", "role": "user", "timestamp": 9}}
    storage.append_line(sm.session_file, orjson.dumps(odd) + b"\n")
    records = storage.read_records(sm.session_file)[1:]
    expected = [{"entryId": r["id"], "text": r["message"]["content"] if isinstance(r["message"]["content"], str)
                 else r["message"]["content"][0]["text"]}
                for r in records if r["message"]["role"] == "user" and r["id"] != records[-2]["id"]]

    reopened = SessionManager.open(sm.session_file, tmp_path)
    reopened.entries.pack(lambda entry: False)  # every entry back on disk
    read: list[int] = []
    original = EntryList._checked
    monkeypatch.setattr(EntryList, "_checked", lambda self, position, line: read.append(position)
                        or original(self, position, line))
    assert reopened.get_fork_messages() == expected
    assert all(records[position]["message"]["role"] == "user" for position in read) and len(read) == 7
    reopened.append_message(user("after"))
    assert reopened.get_fork_messages()[-1]["text"] == "after"


def test_fork_from_copies_every_entry_line_without_parsing(tmp_path: Path) -> None:
    """``--fork`` of a file: a new header, then the source's entry lines byte for byte (blank and
    broken lines left out, a last line without its newline ended), all branches, ids kept."""
    from pi_coding_agent.coding.session import SessionManager
    from tests.support.fixtures.sessions.builders import assistant, user

    sm = SessionManager.create(tmp_path, tmp_path / "s")
    for turn in range(4):
        sm.append_message(user(f"question {turn} ünï \u2028"))
        sm.append_message(assistant(f"answer {turn}"))
    sm.branch(sm.entries[1]["id"])
    sm.append_message(user("side branch"))
    sm.append_label(sm.entries[0]["id"], "start")
    assert sm.session_file is not None
    data = sm.session_file.read_bytes()
    lines = data.rstrip(b"\n").split(b"\n")
    lines.insert(3, b"")
    lines.insert(5, b'{"type":"message","id":"cut","parentId":null,"tim')
    sm.session_file.write_bytes(b"\n".join(lines))  # no final newline

    fork = SessionManager.fork_from(sm.session_file, tmp_path / "elsewhere", tmp_path / "forks")
    assert fork.session_file is not None and fork.session_file.parent == tmp_path / "forks"
    written = fork.session_file.read_bytes().split(b"\n")
    header = orjson.loads(written[0])
    assert header["parentSession"] == str(sm.session_file) and header["cwd"] == str(tmp_path / "elsewhere")
    assert header["id"] != sm.session_id and written[-1] == b""
    assert written[1:-1] == [line for line in lines[1:] if line and b'"cut"' not in line]
    assert fork.entries == sm.entries and fork.leaf_id == sm.leaf_id and fork.labels == sm.labels
    assert fork.get_tree() == sm.get_tree()
