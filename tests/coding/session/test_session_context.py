"""Context reconstruction: compaction, context edits, branch summaries, custom and bash messages,
and their conversion to LLM messages (exact texts)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pi_coding_agent.coding.session import SessionManager, convert_to_llm
from pi_coding_agent.coding.session.ids import iso_to_ms
from tests.support.fixtures.sessions.builders import assistant, bash, system, tool_result, user


def _texts(messages: list[dict[str, Any]]) -> list[str]:
    out = []
    for message in messages:
        content = message.get("content", message.get("summary"))
        out.append(content if isinstance(content, str) else "".join(b.get("text", "") for b in content))
    return out


@pytest.fixture
def sm(tmp_path: Path) -> SessionManager:
    return SessionManager.create(tmp_path, tmp_path / "s", persist=False)


def test_plain_path_and_restored_settings(sm: SessionManager) -> None:
    sm.append_model_change("p1", "m1")
    sm.append_thinking_level_change("high")
    sm.append_message(user("q"))
    sm.append_message(assistant("a"))  # provider mock / mock-model
    context = sm.build_context()
    assert context.model == ("mock", "mock-model") and context.thinking_level == "high"
    assert [m["role"] for m in context.messages] == ["user", "assistant"]
    assert context.context_entry_ids == [e["id"] for e in sm.entries[2:]]
    empty = SessionManager.create(Path("/"), None, persist=False).build_context()
    assert (empty.messages, empty.model, empty.thinking_level) == ([], None, "off")


def test_compaction_keeps_from_first_kept_entry_without_system_messages(sm: SessionManager) -> None:
    sm.append_message(system(preamble="P1"))
    sm.append_message(user("old question"))
    sm.append_message(assistant("old answer"))
    kept = sm.append_message(user("kept question"))
    sm.append_message(system(rules="R"))  # inside the kept range: the snapshot replaces it
    sm.append_message(assistant("kept answer"))
    compaction = sm.append_compaction("THE SUMMARY", kept["id"], 500, details={"readFiles": [], "modifiedFiles": []})
    after = sm.append_message(user("new question"))
    snapshot = compaction["systemMessage"]
    assert snapshot["sections"] == {"preamble": "P1", "rules": "R"}
    assert snapshot["timestamp"] == iso_to_ms(compaction["timestamp"])
    context = sm.build_context()
    assert [m["role"] for m in context.messages] == ["system", "compactionSummary", "user", "assistant", "user"]
    assert context.messages[0] is snapshot
    assert context.messages[1] == {"role": "compactionSummary", "summary": "THE SUMMARY", "tokensBefore": 500,
                                   "timestamp": iso_to_ms(compaction["timestamp"])}
    assert context.context_entry_ids == [compaction["id"], compaction["id"], kept["id"], sm.entries[5]["id"],
                                         after["id"]]


def test_latest_compaction_wins_and_unknown_first_kept_keeps_nothing(sm: SessionManager) -> None:
    sm.append_message(user("one"))
    first = sm.append_compaction("FIRST", sm.entries[0]["id"], 10)
    sm.append_message(user("two"))
    sm.append_compaction("SECOND", first["id"], 20)  # keeps the older compaction entry: it says nothing
    sm.append_message(user("three"))
    assert _texts(sm.build_context().messages) == ["SECOND", "two", "three"]
    sm.append_compaction("THIRD", "", 30)  # keeps nothing: firstKeptEntryId is its own id
    assert sm.entries[-1]["firstKeptEntryId"] == sm.entries[-1]["id"]
    assert _texts(sm.build_context().messages) == ["THIRD"]


def test_context_edits(sm: SessionManager) -> None:
    asked = sm.append_message(user("question"))
    failed = sm.append_message(assistant("partial", stop="error"))
    answer = sm.append_message(assistant("answer"))
    result = sm.append_message(tool_result("c1", "big output"))
    note = sm.append_custom_message("note", [{"type": "text", "text": "n"}], False)
    sm.append_context_edit(failed["id"], None)
    sm.append_context_edit(answer["id"], {"content": "short answer"})
    sm.append_context_edit(result["id"], {"content": "first edit"})
    sm.append_context_edit(result["id"], {"content": [{"type": "text", "text": "last edit wins"}]})
    sm.append_context_edit(asked["id"], {"content": "user string stays a string"})
    sm.append_context_edit(note["id"], {"content": "custom string stays too"})
    messages = sm.build_context().messages
    assert [m["role"] for m in messages] == ["user", "assistant", "toolResult", "custom"]
    assert messages[0]["content"] == "user string stays a string"
    assert messages[1]["content"] == [{"type": "text", "text": "short answer"}]
    assert messages[1]["stopReason"] == "stop" and messages[1]["usage"] == answer["message"]["usage"]
    assert messages[2]["content"] == [{"type": "text", "text": "last edit wins"}]
    assert messages[3]["content"] == "custom string stays too"
    assert answer["message"]["content"] == [{"type": "text", "text": "answer"}]  # the entry is untouched
    assert sm.entries[-5]["replacement"] == {"content": [{"type": "text", "text": "short answer"}]}


def test_context_edit_errors(sm: SessionManager) -> None:
    model = sm.append_model_change("p", "m")
    asked = sm.append_message(user("q"))
    sm.append_message(assistant("a"))
    sm.branch(model["id"])
    other = sm.append_message(user("other branch"))
    cases = [
        ("nope", None, "Entry nope not found"),
        (asked["id"], None, f"Entry {asked['id']} is not on the active branch"),
        (model["id"], None, f"Entry {model['id']} does not contribute editable model content"),
        (other["id"], {"content": 3}, "Context edit replacement must be null or contain string/array content"),
        (other["id"], {"text": "x"}, "Context edit replacement must be null or contain string/array content"),
    ]
    for target, replacement, error in cases:
        with pytest.raises(ValueError) as caught:
            sm.append_context_edit(target, replacement)
        assert str(caught.value) == error
    assert sm.entries[-1] is other


def test_branch_summary_and_custom_messages(sm: SessionManager) -> None:
    first = sm.append_message(user("q1"))
    sm.append_message(assistant("a1"))
    abandoned = sm.append_message(user("q2"))
    summary = sm.branch_with_summary(first["id"], "we tried q2", details={"readFiles": ["x"]})
    assert summary["parentId"] == first["id"] and summary["fromId"] == abandoned["id"]
    sm.append_custom("state", {"hidden": True})
    sm.append_custom_message("ext", "shown to model", True, {"d": 1})
    sm.append_branch_summary("root", "")  # an empty summary contributes nothing
    messages = sm.build_context().messages
    assert [m["role"] for m in messages] == ["user", "branchSummary", "custom"]
    assert messages[1] == {"role": "branchSummary", "summary": "we tried q2", "fromId": abandoned["id"],
                           "timestamp": iso_to_ms(summary["timestamp"])}
    custom_entry = sm.entries[-2]
    assert messages[2] == {"role": "custom", "customType": "ext", "content": "shown to model", "display": True,
                           "details": {"d": 1}, "timestamp": iso_to_ms(custom_entry["timestamp"])}
    assert "details" not in sm.append_custom_message("ext", "plain", False)
    assert "data" not in sm.append_custom("bare")


def test_null_content_is_normalised(sm: SessionManager) -> None:
    sm.append_message({"role": "system", "content": None, "timestamp": 1})
    sm.append_message({"role": "user", "content": None, "timestamp": 2})
    messages = sm.build_context().messages
    assert messages[0]["content"] == "" and messages[1]["content"] == []


def test_convert_to_llm_exact_texts() -> None:
    stamp = 1_700_000_000_000
    messages = [
        {"role": "compactionSummary", "summary": "S1", "tokensBefore": 5, "timestamp": stamp},
        {"role": "branchSummary", "summary": "B1", "fromId": "x", "timestamp": stamp},
        {"role": "custom", "customType": "t", "content": "plain", "display": True, "timestamp": stamp},
        {"role": "custom", "customType": "t", "content": [{"type": "text", "text": "blocks"}], "display": False,
         "timestamp": stamp},
        bash("echo hi", "hi", 0),
        bash("false", "", 1),
        bash("sleep 9", "partial", None, cancelled=True),
        bash("big", "tail", 0, truncated=True, fullOutputPath="/tmp/pi-bash-1.log"),
        bash("secret", "s", 0, excludeFromContext=True),
        {"role": "weird"},
    ]
    passthrough = [user("u"), assistant("a"), tool_result("c", "r"), system(preamble="p")]
    converted = convert_to_llm(messages + passthrough)
    assert all(m["role"] == "user" for m in converted[:8])
    assert converted[8:] == passthrough and converted[8] is passthrough[0]
    assert [m["content"][0]["text"] for m in converted[:8]] == [
        "The conversation history before this point was compacted into the following summary:\n\n"
        "<summary>\nS1\n</summary>",
        "The following is a summary of a branch that this conversation came back from:\n\n<summary>\nB1</summary>",
        "plain",
        "blocks",
        "Ran `echo hi`\n```\nhi\n```",
        "Ran `false`\n(no output)\n\nCommand exited with code 1",
        "Ran `sleep 9`\n```\npartial\n```\n\n(command cancelled)",
        "Ran `big`\n```\ntail\n```\n\n[Output truncated. Full output: /tmp/pi-bash-1.log]",
    ]
    assert converted[0]["timestamp"] == stamp and converted[3]["content"] == messages[3]["content"]


@pytest.mark.slow
def test_the_cached_path_and_context_suffix_match_a_fresh_walk(tmp_path):
    """Appends, branch moves, compactions and settings changes in a seeded random order: the manager's
    incrementally kept path, context suffix and settings always equal a walk of the whole tree."""
    import random

    from pi_coding_agent.coding.session import SessionManager
    from pi_coding_agent.coding.session.context import build_context, select_context_entries

    rng = random.Random(7)
    sm = SessionManager.create(tmp_path, tmp_path, persist=False)
    for step in range(600):
        op = rng.random()
        if op < 0.55:
            role = rng.choice(["user", "assistant"])
            message = {"role": role, "content": [{"type": "text", "text": f"m{step}"}], "timestamp": step}
            if role == "assistant":
                message.update(provider=rng.choice(["a", "b"]), model=f"m{step % 3}")
            sm.append_message(message)
        elif op < 0.65 and sm.entries:
            sm.branch(rng.choice(sm.entries)["id"])
        elif op < 0.75:
            sm.append_thinking_level_change(rng.choice(["off", "low", "high"]))
        elif op < 0.82:
            sm.append_model_change("p", f"x{step}")
        elif sm.leaf_id is not None:
            branch = sm.get_branch()
            kept = rng.choice(branch)["id"] if rng.random() < 0.9 else "missing"
            sm.append_compaction(f"summary {step}", kept, 100, system_message={"role": "system", "content": ""})
        rebuilt = SessionManager(cwd=tmp_path, session_dir=None, persist=False, header=sm.header,
                                 entries=list(sm.entries), session_file=None, flushed=False)
        rebuilt.branch(sm.leaf_id)
        fresh = rebuilt.get_branch()
        assert sm.get_branch() == fresh
        assert select_context_entries(sm.get_context_branch()) == select_context_entries(fresh)
        assert sm.build_context() == build_context(fresh)
