"""The one-pass index on files it did not write the way it expects: CRLF, other writers' spacing, a
cut last line, another process appending, non-ASCII ids; and a large file opening to the same state
as a full parse."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import orjson
import pytest

from pi_coding_agent.coding.session import SessionManager, storage
from pi_coding_agent.coding.session.entries import Entry
from tests.support.fixtures.sessions.builders import assistant, tool_result, user


def _session(tmp_path: Path, turns: int = 6) -> SessionManager:
    """Turns with a compaction half way, then a label, a name and a model change (the kinds the index
    parses during its pass)."""
    sm = SessionManager.create(tmp_path, tmp_path / "s")
    for turn in range(turns):
        sm.append_message(user(f"question {turn}: ünï \u2028 \"q\""))
        sm.append_message(assistant(f"answer {turn}"))
        if turn == turns // 2:
            sm.append_compaction(f"summary {turn}", sm.entries[-2]["id"], 1000)
    sm.append_label(sm.entries[1]["id"], "start")
    sm.append_session_info("edges")
    sm.append_model_change("mock", "mock-model")
    return sm


def _fully_parsed(path: Path, cwd: Path) -> SessionManager:
    """The store a full parse of ``path`` gives (every line parsed, as before the index)."""
    records = storage.read_records(path)
    return SessionManager(cwd=cwd, session_dir=path.parent, persist=True, header=records[0],
                          entries=[r for r in records[1:] if r.get("type") != "session"], session_file=path,
                          flushed=True)


def _same_state(opened: SessionManager, parsed: SessionManager) -> None:
    assert opened.entries == parsed.entries and opened.leaf_id == parsed.leaf_id
    assert b"".join(opened.iter_tree_json()) == b"".join(parsed.iter_tree_json())
    if len(parsed.entries) < 200:  # deeper trees overflow a recursive comparison or ``orjson.dumps``
        assert opened.get_tree() == parsed.get_tree()
        assert b"".join(opened.iter_tree_json()) == orjson.dumps(parsed.get_tree())
    assert opened.build_context() == parsed.build_context()
    assert (opened.labels, opened.session_name) == (parsed.labels, parsed.session_name)
    assert opened.stats() == parsed.stats() and opened.get_fork_messages() == parsed.get_fork_messages()


def _entry_lines(path: Path) -> list[bytes]:
    return path.read_bytes().split(b"\n")[1:]


def test_a_crlf_file_opens_as_its_lf_twin_and_forks_to_lf_lines(tmp_path: Path) -> None:
    """pi splits on LF (a CR is JSON whitespace) and writes every forked entry again without one."""
    sm = _session(tmp_path)
    assert sm.session_file is not None
    crlf = tmp_path / "crlf.jsonl"
    crlf.write_bytes(sm.session_file.read_bytes().replace(b"\n", b"\r\n"))
    _same_state(SessionManager.open(crlf, tmp_path), _fully_parsed(sm.session_file, tmp_path))
    forked = SessionManager.fork_from(crlf, tmp_path, tmp_path / "f")
    assert forked.session_file is not None
    assert _entry_lines(forked.session_file) == _entry_lines(sm.session_file)


def test_one_crlf_line_among_lf_lines_is_forked_without_its_cr(tmp_path: Path) -> None:
    sm = _session(tmp_path)
    assert sm.session_file is not None
    lines = sm.session_file.read_bytes().split(b"\n")
    lines[3] += b"\r"  # an entry line of the kind the index does not parse
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_bytes(b"\n".join(lines))
    forked = SessionManager.fork_from(mixed, tmp_path, tmp_path / "f")
    assert forked.session_file is not None
    assert _entry_lines(forked.session_file) == _entry_lines(sm.session_file)


def test_another_writers_spacing_is_written_again_when_forked(tmp_path: Path) -> None:
    """A file written with spaces after separators opens the same, and ``--fork`` writes each entry as
    pi would (compact), not the source's bytes."""
    sm = _session(tmp_path)
    assert sm.session_file is not None
    records = storage.read_records(sm.session_file)
    spaced = tmp_path / "spaced.jsonl"
    spaced.write_text("".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records))
    _same_state(SessionManager.open(spaced, tmp_path), _fully_parsed(sm.session_file, tmp_path))
    forked = SessionManager.fork_from(spaced, tmp_path, tmp_path / "f")
    assert forked.session_file is not None
    assert _entry_lines(forked.session_file) == _entry_lines(sm.session_file)


def test_a_last_line_cut_short_is_skipped_and_the_next_entry_starts_a_line(tmp_path: Path, capsys: Any) -> None:
    sm = _session(tmp_path)
    assert sm.session_file is not None
    data = sm.session_file.read_bytes()
    sm.session_file.write_bytes(data[: len(data) - 25])  # mid-line, no newline at the end
    opened = SessionManager.open(sm.session_file, tmp_path)
    assert "skipping unreadable line" in capsys.readouterr().err
    assert opened.entries == sm.entries[:-1]
    added = opened.append_message(user("after the cut"))
    reopened = SessionManager.open(sm.session_file, tmp_path)
    capsys.readouterr()
    _same_state(reopened, _fully_parsed(sm.session_file, tmp_path))
    assert reopened.entries == [*sm.entries[:-1], added] and added["parentId"] == sm.entries[-2]["id"]


def test_a_file_that_is_no_session_is_refused_in_one_error_without_a_warning_per_line(tmp_path: Path,
                                                                                     capsys: Any) -> None:
    """Its lines were each warned of as unreadable (a screenful for a file opened by mistake) before
    the one error that matters; nothing of it is rewritten."""
    other = tmp_path / "notes.jsonl"
    other.write_bytes(b"first line of notes\nsecond {line\n\x00\xff binary\n")
    with pytest.raises(ValueError, match="not a valid pi session"):
        SessionManager.open(other, tmp_path)
    assert capsys.readouterr().err == ""
    assert other.read_bytes() == b"first line of notes\nsecond {line\n\x00\xff binary\n"


def test_an_unreadable_line_before_the_header_is_still_warned_of(tmp_path: Path, capsys: Any) -> None:
    sm = _session(tmp_path)
    assert sm.session_file is not None
    entries = list(sm.entries)  # read before the file changes under it
    sm.session_file.write_bytes(b"garbage\n" + sm.session_file.read_bytes())
    assert SessionManager.open(sm.session_file, tmp_path).entries == entries
    assert "skipping unreadable line 1 of" in capsys.readouterr().err


def test_entries_another_process_appends_do_not_shift_ours(tmp_path: Path) -> None:
    """Two stores append to one file: each reads its own entries back from the right offsets, and the
    file opens with both, the other's entry a sibling branch."""
    ours = _session(tmp_path)
    assert ours.session_file is not None
    mine = SessionManager.open(ours.session_file, tmp_path)
    theirs = SessionManager.open(ours.session_file, tmp_path)
    other = theirs.append_message(user("from the other process"))
    first = mine.append_message(user("mine"))
    second = mine.append_message(assistant("mine too"))
    expected = [*ours.entries, first, second]
    mine.entries.pack(lambda entry: False)  # every entry back on disk: read again by offset
    assert mine.entries == expected and mine.get_branch()[-2:] == [first, second]
    reopened = SessionManager.open(ours.session_file, tmp_path)
    assert reopened.entries == [*ours.entries, other, first, second]
    siblings = [node for node in _walk(reopened.get_tree()) if node["entry"]["id"] == ours.leaf_id]
    assert [child["entry"]["id"] for child in siblings[0]["children"]] == [other["id"], first["id"]]
    _same_state(reopened, _fully_parsed(ours.session_file, tmp_path))


def _walk(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    found, stack = [], list(nodes)
    while stack:
        node = stack.pop()
        found.append(node)
        stack.extend(node["children"])
    return found


def test_non_ascii_ids_and_text_open_as_a_full_parse_reads_them(tmp_path: Path) -> None:
    """Ids outside printable ASCII are not read by the prefix pattern; the line is parsed instead."""
    path = tmp_path / "unicode.jsonl"
    header = {"type": "session", "version": 3, "id": "h", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/"}
    ids = ["é1", "日本", "a\u2028b", "plain", "🙂"]
    records: list[Entry] = [header]
    for number, entry_id in enumerate(ids):
        message = user(f"текст {number} 🙂") if number % 2 == 0 else assistant(f"réponse {number} \u2029")
        records.append({"type": "message", "id": entry_id, "parentId": records[-1].get("id") if number else None,
                        "timestamp": f"2026-01-01T00:00:0{number}.000Z", "message": message})
    path.write_bytes(b"".join(map(storage.encode, records)))
    opened = SessionManager.open(path, tmp_path)
    _same_state(opened, _fully_parsed(path, tmp_path))
    assert [entry["id"] for entry in opened.get_branch()] == ids


@pytest.mark.slow
def test_a_large_branched_file_opens_to_the_state_a_full_parse_gives(tmp_path: Path) -> None:
    """10,000 entries with branches, compactions, labels and a name: the index's lazy store answers
    every whole-file and branch question as the store built from every parsed line does."""
    rng = random.Random(7)
    sm = SessionManager.create(tmp_path, tmp_path / "s")
    sm.append_model_change("mock", "mock-model")
    while len(sm.entries) < 10_000:
        turn = len(sm.entries)
        sm.append_message(user(f"turn {turn}"))
        sm.append_message(assistant("", tool_call=f"call_{turn}"))
        sm.append_message(tool_result(f"call_{turn}", "x" * rng.randrange(10, 400)))
        sm.append_message(assistant(f"done {turn}"))
        roll = rng.random()
        if roll < 0.02:
            sm.append_compaction(f"summary {turn}", sm.entries[-4]["id"], 5000)
        elif roll < 0.04:
            sm.branch(sm.entries[rng.randrange(len(sm.entries))]["id"])
        elif roll < 0.05:
            sm.append_label(sm.entries[rng.randrange(len(sm.entries))]["id"], f"label {turn}")
    sm.append_session_info("large")
    assert sm.session_file is not None
    opened = SessionManager.open(sm.session_file, tmp_path)
    parsed = _fully_parsed(sm.session_file, tmp_path)
    _same_state(opened, parsed)
    for entry_id in rng.sample([entry["id"] for entry in parsed.entries], 20):
        assert opened.get_branch(entry_id) == parsed.get_branch(entry_id)
    assert b"".join(opened.iter_entries_json()) == orjson.dumps(parsed.get_entries())


def test_packing_after_each_compaction_keeps_only_the_visible_branch_parsed(tmp_path: Path) -> None:
    """A long run of turns and compactions: the entries held parsed stay those the model sees, and the
    positions the store tracks as parsed are exactly the parsed items."""
    sm = SessionManager.create(tmp_path, tmp_path / "s")
    for turn in range(300):
        sm.append_message(user(f"turn {turn}"))
        sm.append_message(assistant(f"answer {turn}"))
        if turn % 20 == 19:
            sm.append_compaction(f"summary {turn}", sm.entries[-2]["id"], 1000)
    items = sm.entries._items  # white box: what stays resident is the point
    parsed = {position for position, item in enumerate(items) if isinstance(item, dict)}
    assert parsed == sm.entries._held
    visible = {entry["id"] for entry in sm.get_context_branch()}
    assert {items[position]["id"] for position in parsed} <= visible  # type: ignore[index]
    reopened = SessionManager.open(sm.session_file, tmp_path)  # type: ignore[arg-type]
    assert reopened.entries == sm.entries and reopened.build_context() == sm.build_context()
