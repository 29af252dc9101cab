"""The session store on disk: lazy creation, single-write appends, crash tolerance, concurrency,
migration, ids, fork and clone, listing."""

from __future__ import annotations

import json
import multiprocessing
import os
import re
import uuid
from pathlib import Path
from typing import Any

import orjson
import pytest

from pi_coding_agent.coding.session import (
    SessionManager,
    list_sessions,
    migrate_file,
    session_dir_for,
    storage,
)
from pi_coding_agent.coding.session.ids import SESSION_ID_ERROR, uuid7
from tests.support.fixtures.sessions.builders import assistant, usage, user


def _lines(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().split(b"\n") if line]


def _conversation(tmp_path: Path, turns: int = 2) -> SessionManager:
    sm = SessionManager.create(tmp_path, tmp_path / "s")
    sm.append_model_change("mock", "mock-model")
    for n in range(turns):
        sm.append_message(user(f"question {n}"))
        sm.append_message(assistant(f"answer {n}"))
    return sm


# ----------------------------------------------------------------------------- creation and naming


def test_nothing_on_disk_until_first_user_message(tmp_path: Path) -> None:
    session_dir = tmp_path / "sessions"
    sm = SessionManager.create(tmp_path, session_dir)
    sm.append_session_info("named")
    sm.append_model_change("mock", "mock-model")
    sm.append_thinking_level_change("medium")
    assert not session_dir.exists()
    sm.append_message(user("hi"))
    assert sm.session_file is not None
    records = _lines(sm.session_file)
    assert records[0] == sm.header
    assert records[1:] == sm.entries
    assert [r["type"] for r in records] == ["session", "session_info", "model_change", "thinking_level_change",
                                            "message"]
    sm.append_message(assistant("hello"))
    assert _lines(sm.session_file)[-1] == sm.entries[-1]


def test_file_name_header_and_ids(tmp_path: Path) -> None:
    sm = _conversation(tmp_path, 1)
    header = sm.header
    assert list(header) == ["type", "version", "id", "timestamp", "cwd"]
    assert header["version"] == 3 and header["cwd"] == str(tmp_path)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", header["timestamp"])
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", sm.session_id)
    stamp = header["timestamp"].replace(":", "-").replace(".", "-")
    assert sm.session_file == tmp_path / "s" / f"{stamp}_{sm.session_id}.jsonl"
    ids = [e["id"] for e in sm.entries]
    assert all(re.fullmatch(r"[0-9a-f]{8}", i) for i in ids) and len(set(ids)) == len(ids)
    assert [e["parentId"] for e in sm.entries] == [None, *ids[:-1]]


def test_uuid7_is_time_ordered_and_strictly_increasing() -> None:
    ids = [uuid7() for _ in range(5000)]  # thousands per millisecond exercise the counter
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    parsed = uuid.UUID(ids[-1])
    assert parsed.version == 7 and parsed.variant == uuid.RFC_4122


def test_session_id_validation(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=re.escape(SESSION_ID_ERROR)):
        SessionManager.create(tmp_path, tmp_path, session_id="-bad")
    sm = SessionManager.create(tmp_path, tmp_path, session_id="my.id_1")
    assert sm.session_id == "my.id_1"


def test_no_session_never_touches_disk(tmp_path: Path) -> None:
    sm = SessionManager.create(tmp_path, tmp_path / "s", persist=False)
    sm.append_message(user("hi"))
    sm.append_message(assistant("hello"))
    clone = sm.fork(sm.leaf_id, "at")
    assert sm.session_file is None and clone.session_file is None
    assert "parentSession" not in clone.header
    assert [e["id"] for e in clone.entries] == [e["id"] for e in sm.entries]
    assert list(tmp_path.iterdir()) == []


def test_session_dir_for_encodes_cwd(tmp_path: Path) -> None:
    assert session_dir_for(Path("/agent"), Path("/home/ana/work1")) == Path("/agent/sessions/--home-ana-work1--")


def test_open_missing_path_creates_session_there_lazily(tmp_path: Path) -> None:
    target = tmp_path / "chosen.jsonl"
    sm = SessionManager.open(target, tmp_path)
    assert sm.session_file == target and not target.exists()
    sm.append_message(user("hi"))
    assert _lines(target)[0]["id"] == sm.session_id


def test_open_empty_file_gets_header_and_invalid_file_is_refused(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    sm = SessionManager.open(empty, tmp_path)
    assert _lines(empty) == [sm.header]
    other = tmp_path / "other.jsonl"
    other.write_bytes(b'{"type":"message","id":"x"}\n')
    with pytest.raises(ValueError, match=re.escape(f"Session file is not a valid pi session: {other}")):
        SessionManager.open(other, tmp_path)
    assert other.read_bytes() == b'{"type":"message","id":"x"}\n'


def test_open_uses_recorded_cwd_and_continue_recent_the_current_one(tmp_path: Path) -> None:
    sm = _conversation(tmp_path, 1)
    assert sm.session_file is not None
    assert SessionManager.open(sm.session_file, Path("/elsewhere")).cwd == tmp_path
    recent = SessionManager.continue_recent(tmp_path, tmp_path / "s")
    assert recent is not None and recent.session_file == sm.session_file
    assert SessionManager.continue_recent(Path("/elsewhere"), tmp_path / "s") is None  # custom dir: cwd filter
    assert SessionManager.continue_recent(tmp_path, tmp_path / "none") is None


# ----------------------------------------------------------------------------- durability


def test_failed_write_keeps_the_entry_and_rewrites_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sm = _conversation(tmp_path, 1)
    told: list[OSError | None] = []
    sm.save_listener = lambda path, error: told.append(error)

    def broken(path: Path, line: bytes) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(storage, "append_line", broken)
    kept = sm.append_message(user("kept in memory"))
    assert sm.leaf_id == kept["id"] and sm.entries[-1] == kept
    assert [e.strerror for e in told if e] == ["No space left on device"]
    monkeypatch.undo()
    after = sm.append_message(user("after"))
    assert after["parentId"] == kept["id"] and told[-1] is None
    assert sm.session_file is not None
    assert _lines(sm.session_file) == [sm.header, *sm.entries]


def test_failed_first_write_removes_the_partial_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sm = SessionManager.create(tmp_path, tmp_path)
    sm.append_model_change("mock", "m")

    def short_write(fd: int, data: bytes) -> None:
        raise OSError("short write")

    monkeypatch.setattr(storage, "_write_all", short_write)
    sm.append_message(user("hi"))
    assert sm.session_file is not None and not sm.session_file.exists()
    assert len(sm.entries) == 2
    monkeypatch.undo()
    sm.append_message(user("hi again"))
    assert _lines(sm.session_file) == [sm.header, *sm.entries]


@pytest.mark.slow
def test_truncated_last_line_at_every_offset(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sm = _conversation(tmp_path, 2)
    sm.append_message(user("last line with ünïcödé and \u2028 inside"))
    assert sm.session_file is not None
    data = sm.session_file.read_bytes()
    last_start = data.rindex(b"\n", 0, len(data) - 1) + 1
    complete = sm.entries[:-1]
    for cut in range(last_start, len(data)):
        path = tmp_path / f"cut{cut}.jsonl"
        path.write_bytes(data[:cut])
        reopened = SessionManager.open(path, tmp_path)
        whole_line = cut == len(data) - 1  # everything but the final newline
        assert reopened.entries == (sm.entries if whole_line else complete)
        added = reopened.append_message(assistant("after crash"))
        separator = b"\n" if cut > last_start else b""  # a partial line gets its newline first
        assert path.read_bytes() == data[:cut] + separator + orjson.dumps(added) + b"\n"
        again = SessionManager.open(path, tmp_path)
        assert again.entries == reopened.entries and again.leaf_id == added["id"]
    assert "line 7 of session file" in capsys.readouterr().err


def test_corrupt_line_is_skipped_reported_and_kept(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sm = _conversation(tmp_path, 2)
    assert sm.session_file is not None
    lines = sm.session_file.read_bytes().split(b"\n")
    lines.insert(3, b"{not json")
    lines.insert(4, b"   ")
    sm.session_file.write_bytes(b"\n".join(lines))
    reopened = SessionManager.open(sm.session_file, tmp_path)
    assert reopened.entries == sm.entries
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "line 4" in err and str(sm.session_file) in err
    reopened.append_message(user("more"))
    assert b"{not json\n" in sm.session_file.read_bytes()


def _append_many(path: str, worker: int, count: int) -> None:
    sm = SessionManager.open(Path(path), Path(path).parent)
    for n in range(count):
        sm.append_message(user(f"worker {worker} message {n} " + "x" * (n * 97 % 5000)))


@pytest.mark.slow
def test_concurrent_appends_from_processes_never_interleave(tmp_path: Path) -> None:
    sm = _conversation(tmp_path, 1)
    assert sm.session_file is not None
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_append_many, args=(str(sm.session_file), w, 150)) for w in range(4)]
    for process in workers:
        process.start()
    for process in workers:
        process.join()
        assert process.exitcode == 0
    lines = sm.session_file.read_bytes().split(b"\n")
    assert lines[-1] == b""
    records = [orjson.loads(line) for line in lines[:-1]]
    assert len(records) == 1 + len(sm.entries) + 4 * 150


# ----------------------------------------------------------------------------- migration


def _v1_file(path: Path) -> None:
    records = [
        {"type": "session", "id": "old", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w"},
        {"type": "message", "timestamp": "2025-01-01T00:00:01.000Z", "message": user("one")},
        {"type": "message", "timestamp": "2025-01-01T00:00:02.000Z", "message": assistant("two")},
        {"type": "message", "timestamp": "2025-01-01T00:00:03.000Z",
         "message": {"role": "hookMessage", "customType": "h", "content": "hook", "display": True,
                     "timestamp": 1}},
        {"type": "compaction", "timestamp": "2025-01-01T00:00:04.000Z", "summary": "S",
         "firstKeptEntryIndex": 2, "tokensBefore": 10},
    ]
    path.write_bytes(storage.encode_all(records))


def test_v1_file_migrates_in_memory_only(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    _v1_file(path)
    original = path.read_bytes()
    sm = SessionManager.open(path, tmp_path)
    assert path.read_bytes() == original
    ids = [e["id"] for e in sm.entries]
    assert [e["parentId"] for e in sm.entries] == [None, *ids[:-1]]
    assert sm.entries[2]["message"]["role"] == "custom"
    assert sm.entries[3]["firstKeptEntryId"] == ids[1] and "firstKeptEntryIndex" not in sm.entries[3]
    assert sm.header["version"] == 3
    assert [m["role"] for m in sm.build_context().messages] == ["compactionSummary", "assistant", "custom"]


def test_appending_to_old_file_rewrites_it_first_with_backup(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    _v1_file(path)
    original = path.read_bytes()
    sm = SessionManager.open(path, tmp_path)
    sm.append_message(user("new"))
    assert (tmp_path / "old.jsonl.bak").read_bytes() == original
    records = _lines(path)
    assert records[0]["version"] == 3 and records[1:] == sm.entries
    assert SessionManager.open(path, tmp_path).entries == sm.entries


def test_migrate_file(tmp_path: Path) -> None:
    path = tmp_path / "v2.jsonl"
    path.write_bytes(storage.encode_all([
        {"type": "session", "version": 2, "id": "s", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w"},
        {"type": "message", "id": "aaaaaaaa", "parentId": None, "timestamp": "2025-01-01T00:00:01.000Z",
         "message": {"role": "hookMessage", "customType": "h", "content": "x", "display": False, "timestamp": 1}},
    ]))
    original = path.read_bytes()
    assert migrate_file(path) == path
    assert (tmp_path / "v2.jsonl.bak").read_bytes() == original
    records = _lines(path)
    assert records[0]["version"] == 3
    assert records[1]["id"] == "aaaaaaaa" and records[1]["message"]["role"] == "custom"
    current = path.read_bytes()
    migrate_file(path)
    assert path.read_bytes() == current


# ----------------------------------------------------------------------------- tree, names, labels


def test_leaf_on_load_is_last_entry_and_branching_is_not_persisted(tmp_path: Path) -> None:
    sm = _conversation(tmp_path, 2)
    first_answer = sm.entries[2]
    sm.branch(first_answer["id"])
    assert sm.get_branch()[-1] is first_answer
    assert sm.session_file is not None
    assert SessionManager.open(sm.session_file, tmp_path).leaf_id == sm.entries[-1]["id"]
    new = sm.append_message(user("other branch"))
    assert new["parentId"] == first_answer["id"]
    tree = SessionManager.open(sm.session_file, tmp_path).get_tree()
    assert len(tree) == 1
    node = tree[0]
    while len(node["children"]) == 1:
        node = node["children"][0]
    assert [c["entry"]["id"] for c in node["children"]] == [sm.entries[3]["id"], new["id"]]
    with pytest.raises(ValueError, match="Entry nope not found"):
        sm.branch("nope")


def test_orphans_become_roots(tmp_path: Path) -> None:
    sm = _conversation(tmp_path, 1)
    assert sm.session_file is not None
    lines = sm.session_file.read_bytes().split(b"\n")
    del lines[2]  # the first user message: its child loses its parent
    sm.session_file.write_bytes(b"\n".join(lines))
    reopened = SessionManager.open(sm.session_file, tmp_path)
    assert [root["entry"]["id"] for root in reopened.get_tree()] == [sm.entries[0]["id"], sm.entries[2]["id"]]
    assert [e["id"] for e in reopened.get_branch()] == [sm.entries[2]["id"]]


def test_get_entries_since(tmp_path: Path) -> None:
    sm = _conversation(tmp_path, 2)
    assert sm.get_entries(sm.entries[2]["id"]) == sm.entries[3:]
    with pytest.raises(KeyError, match="Entry not found: zzz"):
        sm.get_entries("zzz")


def test_session_name_is_last_info_in_file_and_labels_replay(tmp_path: Path) -> None:
    sm = _conversation(tmp_path, 1)
    target = sm.entries[1]["id"]
    sm.append_session_info("first\r\nname  ")
    sm.append_label(target, "one")
    sm.branch(sm.entries[0]["id"])
    sm.append_session_info("on another branch")
    sm.append_label(target, "two")
    assert sm.session_file is not None
    reopened = SessionManager.open(sm.session_file, tmp_path)
    assert reopened.session_name == "on another branch"
    assert sm.entries[-4]["name"] == "first name"
    assert reopened.labels[target]["label"] == "two"
    reopened.append_label(target, None)
    assert "label" not in reopened.entries[-1]
    assert target not in SessionManager.open(sm.session_file, tmp_path).labels
    reopened.append_session_info("   ")
    assert reopened.session_name is None
    with pytest.raises(ValueError, match="Entry missing not found"):
        reopened.append_label("missing", "x")


def test_fork_before_first_user_message_is_empty_with_parent(tmp_path: Path) -> None:
    sm = SessionManager.create(tmp_path, tmp_path / "s")
    first = sm.append_message(user("hi"))
    sm.append_message(assistant("yo"))
    forked = sm.fork(first["id"], "before")
    assert forked.entries == [] and forked.header["parentSession"] == str(sm.session_file)
    assert forked.session_file is not None and not forked.session_file.exists()
    with pytest.raises(ValueError, match="Invalid entry ID for forking"):
        sm.fork(sm.entries[1]["id"], "before")
    with pytest.raises(ValueError, match="Invalid entry ID for forking"):
        sm.fork("nope", "at")


def test_fork_of_unsaved_session_is_refused(tmp_path: Path) -> None:
    sm = SessionManager.create(tmp_path, tmp_path / "s")
    model = sm.append_model_change("mock", "m")
    with pytest.raises(ValueError, match="has not been saved yet"):
        sm.fork(model["id"], "at")


def test_list_sessions(tmp_path: Path) -> None:
    older = _conversation(tmp_path, 1)
    newer = SessionManager.create(tmp_path, tmp_path / "s", parent_session="/p.jsonl")
    newer.append_session_info("named")
    newer.append_message(user("the question"))
    (tmp_path / "s" / "junk.jsonl").write_bytes(b"not a session\n")
    infos = list_sessions(tmp_path / "s")
    assert [i["id"] for i in infos] == [newer.session_id, older.session_id]
    assert infos[0]["name"] == "named" and infos[0]["parentSessionPath"] == "/p.jsonl"
    assert infos[0]["firstMessage"] == "the question" and infos[0]["messageCount"] == 1
    assert infos[1]["messageCount"] == 2 and infos[1]["allMessagesText"] == "question 0 answer 0"
    assert list_sessions(tmp_path / "s", Path("/elsewhere")) == []


def test_stats_count_every_branch_and_every_usage(tmp_path: Path) -> None:
    sm = _conversation(tmp_path, 1)
    sm.branch(sm.entries[1]["id"])
    sm.append_message(assistant(tool_call="call_9"))
    sm.append_usage("cache_warm", "mock", "mock-model", usage(50, 0, 0.5), note="warm")
    sm.append_usage("cache_warm", "mock", "mock-model", usage(1, 0, 0.25))
    sm.append_compaction("S", "", 5, usage=usage(7, 3, 0.125))
    assert sm.entries[-3]["note"] == "warm" and "note" not in sm.entries[-2]
    assert sm.stats() == {
        "userMessages": 1, "assistantMessages": 2, "toolCalls": 1, "toolResults": 0, "totalMessages": 3,
        "tokens": {"input": 258, "output": 23, "cacheRead": 0, "cacheWrite": 0, "total": 281},
        "cost": 0.001 * 2 + 0.5 + 0.25 + 0.125,
    }


def test_deep_tree_encodes_without_recursion(tmp_path: Path) -> None:
    sm = _conversation(tmp_path, 1)
    sm.append_label(sm.entries[1]["id"], "here")
    sm.branch(sm.entries[0]["id"])
    sm.append_message(user("side branch"))
    small = sm.get_tree()
    assert b"".join(sm.iter_tree_json()) == orjson.dumps(small)
    for n in range(300):  # deeper than orjson allows, shallow enough for json.loads to check
        sm.append_custom("deep", {"n": n})
    deep = sm.get_tree()
    with pytest.raises(orjson.JSONEncodeError):
        orjson.dumps(deep)
    decoded = json.loads(b"".join(sm.iter_tree_json()))
    node = decoded[0]["children"][1]
    depth = 0
    while node["children"]:
        node, depth = node["children"][0], depth + 1
    assert depth == 300 and node["entry"] == sm.entries[-1]


def test_an_append_the_disk_cuts_short_is_cut_off(tmpfs: tuple[Path, Any]) -> None:
    """A real full disk (tmpfs): the short write's bytes are truncated away, the errno is ENOSPC."""
    path = tmpfs[0] / "s.jsonl"
    path.write_bytes(b'{"type":"session","id":"x"}\n')
    before = path.read_bytes()
    free = os.statvfs(tmpfs[0])
    (tmpfs[0] / "filler").write_bytes(b"\0" * (free.f_bavail * free.f_frsize - 8192))
    with pytest.raises(OSError) as failure:
        storage.append_line(path, b'{"big":"' + b"x" * 100_000 + b'"}\n')
    assert failure.value.errno == 28  # ENOSPC, not a generic "short write"
    assert path.read_bytes() == before


def test_a_deleted_file_comes_back_with_the_entries_only_it_held(tmp_path: Path) -> None:
    sm = _conversation(tmp_path, 3)
    sm.branch(sm.entries[2]["id"])  # the first answer: the later turns are left on another branch
    sm.append_message(user("another branch"))
    assert sm.session_file is not None
    reopened = SessionManager.open(sm.session_file, tmp_path)  # off-branch entries stay on disk
    sm.session_file.unlink()
    reopened.append_message(user("after the delete"))
    assert _lines(sm.session_file) == [sm.header, *sm.entries, reopened.entries[-1]]
