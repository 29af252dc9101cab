"""``get_session_stats`` of a file just opened: equal to a full parse, without parsing what adds only to counts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from pi_coding_agent.coding.session import SessionManager
from pi_coding_agent.coding.session.entry_list import EntryList
from pi_coding_agent.coding.session.totals import FileTotals
from tests.support.fixtures.sessions.builders import assistant, bash, system, tool_result, usage, user


def _written(tmp_path: Path) -> Path:
    """A session file of every kind stats read: tool calls, usage on assistant messages, a tool result
    with usage and one whose text names ``"usage"``, usage entries, a compaction, a branch summary,
    a bash execution, a custom message, a side branch, and one user line spaced by another writer."""
    sm = SessionManager.create(tmp_path, tmp_path / "s")
    sm.append_model_change("mock", "mock-model")
    sm.append_message(system(preamble="stats"))
    for turn in range(30):
        sm.append_message(user(f"question {turn}"))
        sm.append_message(assistant(f"reading {turn}", tool_call=f"call_{turn}"))
        text = '{"usage": {"input": 999}} ' * 3 if turn % 7 == 0 else f"file {turn}\n" * 50
        result = tool_result(f"call_{turn}", text)
        if turn % 10 == 3:
            result["usage"] = usage(7, 0, 0.5)
        sm.append_message(result)
        sm.append_message(assistant(f"answer {turn}"))
        if turn == 12:
            sm.append_compaction("summary", sm.entries[-2]["id"], 5000)
        if turn == 20:
            fork_point = sm.entries[-3]["id"]
    sm.append_usage("compaction", "mock", "mock-model", usage(300, 30, 0.03))
    sm.append_message(bash("ls", "a\nb"))
    sm.append_custom_message("note", "hello", True)
    sm.branch(fork_point)
    sm.append_branch_summary(fork_point, "the other way")
    sm.append_message(user("on the side branch"))
    sm.append_message(assistant("side answer"))
    assert sm.session_file is not None
    lines = sm.session_file.read_bytes().splitlines()
    spaced = next(i for i, line in enumerate(lines) if b'"role":"user"' in line)
    lines[spaced] = json.dumps(orjson.loads(lines[spaced])).encode()  # ", " and ": ": no prefix match
    sm.session_file.write_bytes(b"\n".join(lines) + b"\n")
    return sm.session_file


def _full_parse(path: Path) -> dict[str, Any]:
    """The stats as computed before the skim: every entry line parsed and added."""
    totals = FileTotals()
    for line in path.read_bytes().splitlines()[1:]:
        totals.add(orjson.loads(line))
    return totals.stats()


def test_first_stats_equal_a_full_parse(tmp_path):
    path = _written(tmp_path)
    opened = SessionManager.open(path, tmp_path)
    expected = _full_parse(path)
    assert expected["toolResults"] == 30 and expected["toolCalls"] == 30  # the file is what it says
    assert expected["tokens"]["input"] == 61 * 100 + 3 * 7 + 300  # assistants, tool results, usage entry
    assert opened.stats() == expected
    opened.append_message(assistant("after the first call"))  # later entries are added to the totals
    assert opened.stats() == _full_parse(path)


def test_first_stats_parse_no_user_message_nor_tool_result_without_usage(tmp_path, monkeypatch):
    """The first call reads the file but parses only what adds more than a count (issue #40: it was
    30 times pi's time on a large file, parsing every tool result)."""
    path = _written(tmp_path)
    opened = SessionManager.open(path, tmp_path)
    parsed: list[dict[str, Any]] = []
    checked = EntryList._checked

    def counting(self: EntryList, position: int, line: Any) -> Any:
        entry = checked(self, position, line)
        parsed.append(entry)
        return entry

    monkeypatch.setattr(EntryList, "_checked", counting)
    stats = opened.stats()
    roles = [(entry.get("message") or {}).get("role") for entry in parsed]
    assert stats["toolResults"] == 30 and "assistant" in roles  # assistants are parsed for their usage
    assert roles.count("toolResult") == 3  # the three with usage, not those that only name it
    assert roles.count("user") <= 1  # only the spaced line, which no prefix match can skip


@pytest.mark.parametrize("role", ["user", "assistant", "toolResult"])
def test_fork_messages_still_parse_only_their_role(tmp_path, monkeypatch, role):
    """``messages_of`` (what ``get_fork_messages`` reads) is the skim with a role filter."""
    path = _written(tmp_path)
    opened = SessionManager.open(path, tmp_path)
    found = list(opened.entries.messages_of(role))
    expected = [orjson.loads(line) for line in path.read_bytes().splitlines()[1:]]
    assert [e["id"] for e in found] == [e["id"] for e in expected
                                        if e["type"] == "message" and e["message"]["role"] == role]
