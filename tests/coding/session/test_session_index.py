"""The one-pass session index: files open from offsets and links, only the visible branch is parsed,
entries go back to disk, whole-session results stream, and the RPC writer splices chunks exactly."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import orjson
import pytest

from pi_coding_agent.coding.modes.rpc.transport import RecordWriter, StreamedJson
from pi_coding_agent.coding.session import SessionManager, iter_array, storage
from tests.support.fixtures.sessions.builders import assistant, system, user


def _held(sm: SessionManager) -> set[str]:
    """Ids of the entries the entry list holds parsed (the rest are packed or on disk)."""
    items = sm.entries._items  # white box: what is resident is the point of the index
    return {item["id"] for item in items if isinstance(item, dict)}


def _branched(tmp_path: Path) -> SessionManager:
    """Two compactions, a side branch, labels, a name, custom entries, a context edit."""
    sm = SessionManager.create(tmp_path, tmp_path / "s")
    sm.append_model_change("mock", "mock-model")
    sm.append_thinking_level_change("high")
    sm.append_message(system(preamble="you are a test"))
    for turn in range(12):
        sm.append_message(user(f"question {turn} with ünïcödé, \u2028 and \"quotes\" {{braces}}"))
        sm.append_message(assistant(f"answer {turn}"))
        if turn in (4, 8):
            sm.append_compaction(f"summary {turn}", sm.entries[-2]["id"], 1000 + turn)
    fork_point = sm.entries[-6]["id"]
    sm.append_label(sm.entries[5]["id"], "early")
    sm.append_session_info("indexed")
    sm.append_custom("state", {"n": 1})
    sm.append_custom_message("note", "a note", True)
    sm.append_context_edit(sm.entries[-6]["id"], None)
    leaf = sm.leaf_id
    sm.branch(fork_point)
    sm.append_message(user("side branch"))
    sm.branch(leaf)
    return sm


def test_a_reopened_file_is_the_store_that_wrote_it(tmp_path: Path) -> None:
    sm = _branched(tmp_path)
    assert sm.session_file is not None
    again = SessionManager.open(sm.session_file, tmp_path)
    again.branch(sm.leaf_id)
    assert again.entries == sm.entries == storage.read_records(sm.session_file)[1:]
    assert again.get_tree() == sm.get_tree()
    assert b"".join(again.iter_tree_json()) == orjson.dumps(sm.get_tree())
    assert b"".join(again.iter_entries_json()) == orjson.dumps(sm.get_entries())
    assert again.build_context() == sm.build_context()
    assert (again.session_name, again.labels) == ("indexed", sm.labels)
    assert again.get_fork_messages() == sm.get_fork_messages() and again.stats() == sm.stats()


def test_only_the_model_visible_branch_is_held_parsed(tmp_path: Path) -> None:
    sm = _branched(tmp_path)
    assert sm.session_file is not None
    again = SessionManager.open(sm.session_file, tmp_path)
    visible = {entry["id"] for entry in again.get_context_branch()}
    assert _held(again) <= visible  # the branch itself is read into the manager's path
    assert len(visible) < len(again.entries) // 2
    # what a compaction summarised while the session ran went back to the file, not into bytes
    last_compaction = max(p for p, entry in enumerate(sm.entries) if entry["type"] == "compaction")
    context = {entry["id"] for entry in sm.get_context_branch()}
    summarised = [item for item in sm.entries._items[:last_compaction] if item is None or item["id"] not in context]
    assert summarised and all(item is None for item in summarised)
    assert not any(isinstance(item, bytes) for item in sm.entries._items)


def test_lines_in_another_shape_are_parsed_in_full(tmp_path: Path) -> None:
    """Other key orders, spaces and escapes (any JSON writer) index the same; responses re-encode."""
    path = tmp_path / "odd.jsonl"
    header = {"type": "session", "version": 3, "id": "h", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/"}
    root = {"id": "a\\u0041", "parentId": None, "type": "message", "timestamp": "2026-01-01T00:00:01.000Z",
            "message": user("hi")}
    child = {"type": "message", "id": "b", "parentId": "a\\u0041", "timestamp": "2026-01-01T00:00:02.000Z",
             "message": assistant("hello")}
    compact = json.dumps(child, separators=(",", ":"), ensure_ascii=False)  # our shape but for the escape
    lines = [json.dumps(header), json.dumps(root), compact]
    lines = [line.replace("\\\\u0041", "\\u0041") for line in lines]
    path.write_text("\n".join(lines) + "\n")
    sm = SessionManager.open(path, tmp_path)
    assert [entry["id"] for entry in sm.entries] == ["aA", "b"] and sm.leaf_id == "b"
    assert [m["role"] for m in sm.build_context().messages] == ["user", "assistant"]
    assert json.loads(b"".join(sm.iter_tree_json()))[0]["children"][0]["entry"]["id"] == "b"
    assert b", " not in b"".join(sm.iter_entries_json())  # orjson's spacing, not the file's


def test_a_replaced_file_is_reported_not_misread(tmp_path: Path) -> None:
    sm = _branched(tmp_path)
    assert sm.session_file is not None
    again = SessionManager.open(sm.session_file, tmp_path)
    data = sm.session_file.read_bytes()
    sm.session_file.write_bytes(data.replace(b'"id":"', b'"id":"x', 1 + data.count(b"\n") // 2))
    with pytest.raises(ValueError, match="damaged or was replaced"):
        list(again.entries)


def test_a_broken_leaf_line_is_skipped_even_when_it_looks_whole(tmp_path: Path, capsys: Any) -> None:
    """A cut that happens to end in ``}`` followed by the next append's newline is still caught."""
    sm = _branched(tmp_path)
    assert sm.session_file is not None
    data = sm.session_file.read_bytes()
    cut = data.rindex(b"}}\n") + 1  # drop the last entry's final brace: the line ends in "}" but is broken
    sm.session_file.write_bytes(data[:cut])
    again = SessionManager.open(sm.session_file, tmp_path)
    added = again.append_message(user("after the crash"))
    reopened = SessionManager.open(sm.session_file, tmp_path)
    assert reopened.entries == again.entries and reopened.leaf_id == added["id"]
    assert "skipping unreadable line" in capsys.readouterr().err


def _written(record: Any) -> bytes:
    """What RecordWriter writes for ``record`` (to a regular file: plain blocking writes)."""
    async def run(path: Path) -> bytes:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT)
        writer = RecordWriter(fd)
        await writer.start()
        writer.send({"type": "before"})
        writer.send(record)
        writer.send({"type": "after"})
        await writer.close()
        os.close(fd)
        return path.read_bytes()

    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        return asyncio.run(run(Path(scratch) / "out"))


@pytest.mark.slow
def test_streamed_values_are_spliced_into_the_line_exactly() -> None:
    values = [{"n": n, "text": "\x00 and ünï" * n} for n in range(2000)]  # a NUL in data stays escaped
    record = {"id": "1", "type": "response", "command": "get_entries", "success": True,
              "data": {"entries": StreamedJson(iter_array(map(orjson.dumps, values))), "leafId": "x",
                       "more": StreamedJson([b"[]"])}}
    expected = {**record, "data": {"entries": values, "leafId": "x", "more": []}}
    lines = _written(record).split(b"\n")
    assert lines[0] == b'{"type":"before"}' and lines[2] == b'{"type":"after"}' and lines[3] == b""
    assert lines[1] == orjson.dumps(expected)


def test_a_record_that_cannot_be_serialised_is_still_dropped_whole() -> None:
    assert _written({"type": "bad", "value": object()}) == b'{"type":"before"}\n{"type":"after"}\n'


@pytest.mark.parametrize("name", ["basic", "compaction", "fork", "clone"])
def test_files_pi_wrote_take_the_fast_path(name: str) -> None:
    """pi's key order is ours: only the kinds the store needs at once are parsed while indexing."""
    from pi_coding_agent.coding.session.file_index import index_file

    path = Path(__file__).parents[2] / "support" / "fixtures" / "sessions" / f"{name}.jsonl"
    index = index_file(path)
    assert index.header is not None and index.ids
    assert {entry["type"] for entry in index.parsed.values()} <= {"label", "session_info", "compaction"}
    assert len(index.ids) == len(storage.read_records(path)) - 1


def test_file_totals_follow_appends_after_first_use(tmp_path: Path) -> None:
    sm = _branched(tmp_path)
    assert sm.session_file is not None
    before = sm.stats()
    assert sm.get_fork_messages()
    sm.append_message(user("one more"))
    sm.append_message(assistant("and a reply"))
    reopened = SessionManager.open(sm.session_file, tmp_path)
    assert sm.stats() == reopened.stats() != before
    assert sm.get_fork_messages() == reopened.get_fork_messages()
    assert sm.get_fork_messages()[-1] == {"entryId": sm.entries[-2]["id"], "text": "one more"}


def test_a_broken_line_inside_the_branch_falls_back_to_a_full_parse(tmp_path: Path, capsys: Any) -> None:
    """A damaged line that later entries still name as parent: the open parses every line instead."""
    sm = SessionManager.create(tmp_path, tmp_path / "s")
    for turn in range(3):
        sm.append_message(user(f"q{turn}"))
        sm.append_message(assistant(f"a{turn}"))
    assert sm.session_file is not None
    lines = sm.session_file.read_bytes().split(b"\n")
    lines[3] = lines[3][:-2] + b"}"  # the third entry loses a brace but keeps its children
    sm.session_file.write_bytes(b"\n".join(lines))
    again = SessionManager.open(sm.session_file, tmp_path)
    assert [entry["id"] for entry in again.entries] == [e["id"] for i, e in enumerate(sm.entries) if i != 2]
    assert again.leaf_id == sm.leaf_id and "skipping unreadable line 4" in capsys.readouterr().err
