"""Compaction preparation and token estimates on synthetic sessions."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from pi_coding_agent.coding.compaction.prepare import (
    ALREADY_COMPACTED,
    NOTHING_TO_COMPACT,
    CompactionError,
    prepare_compaction,
    raise_unpreparable,
)
from pi_coding_agent.coding.compaction.tokens import (
    context_usage,
    estimate_context_tokens,
    estimate_message_tokens,
)
from pi_coding_agent.coding.session import SessionManager

# --------------------------------------------------------------------------- builders (shared by the
# other compaction test modules)


def usage(total: int = 0) -> dict[str, Any]:
    return {"input": total, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": total,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}


def user(text: str, ts: int = 1) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": ts}


def assistant(text: str = "", calls: list[tuple[str, str, dict[str, Any]]] = (), total: int = 0,  # type: ignore[assignment]
              stop: str | None = None, ts: int = 1, provider: str = "fake", model: str = "m") -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    content += [{"type": "toolCall", "id": cid, "name": name, "arguments": args} for cid, name, args in calls]
    return {"role": "assistant", "content": content, "api": "openai-completions", "provider": provider,
            "model": model, "usage": usage(total), "stopReason": stop or ("toolUse" if calls else "stop"),
            "timestamp": ts}


def tool_result(call_id: str, text: str, name: str = "read", ts: int = 1) -> dict[str, Any]:
    return {"role": "toolResult", "toolCallId": call_id, "toolName": name,
            "content": [{"type": "text", "text": text}], "isError": False, "timestamp": ts}


def new_store(tmp_path: Path) -> SessionManager:
    return SessionManager.create(tmp_path, tmp_path, persist=False)


def add(sm: SessionManager, *messages: dict[str, Any]) -> list[str]:
    return [sm.append_message(m)["id"] for m in messages]


def turn(sm: SessionManager, n: int, size: int = 400) -> list[str]:
    """A user request, a read call, its result and a reply: four entries of ``size`` characters each."""
    return add(sm, user("u" * size), assistant("a" * size, [(f"c{n}", "read", {"path": f"src/f{n}.py"})]),
               tool_result(f"c{n}", "r" * size), assistant("d" * size))


# --------------------------------------------------------------------------- token estimates


def test_message_token_estimates_follow_the_role_rules() -> None:
    image = {"type": "image", "data": "AAAA", "mimeType": "image/png"}
    assert estimate_message_tokens({"role": "user", "content": "abcde"}) == 2
    assert estimate_message_tokens({"role": "user", "content": [{"type": "text", "text": "abcd"}, image]}) == 1201
    message = assistant("hi", [("c", "read", {"path": "a"})])
    message["content"].insert(0, {"type": "thinking", "thinking": "hmm!"})
    # "hi" + "hmm!" + "read" + '{"path":"a"}'
    assert estimate_message_tokens(message) == math.ceil((2 + 4 + 4 + 12) / 4)
    assert estimate_message_tokens(tool_result("c", "x" * 9)) == 3
    assert estimate_message_tokens({"role": "custom", "customType": "t", "content": "abcdefgh"}) == 2
    assert estimate_message_tokens({"role": "bashExecution", "command": "ls", "output": "a.txt"}) == 2
    assert estimate_message_tokens({"role": "compactionSummary", "summary": "s" * 10}) == 3
    assert estimate_message_tokens({"role": "branchSummary", "summary": "s" * 12, "fromId": "x"}) == 3
    tools = [{"name": "read", "description": "d", "parameters": {}}]
    system = {"role": "system", "content": "ab", "sections": {"a": "x" * 6, "gone": None}, "toolsAdded": tools}
    assert estimate_message_tokens(system) == math.ceil((2 + 6 + len('[{"name":"read","description":"d","parameters":{}}]')) / 4)
    assert estimate_message_tokens({"role": "unknown"}) == 0


def test_context_estimate_uses_the_last_valid_usage_plus_later_messages() -> None:
    messages = [user("x" * 40), assistant("y", total=500), user("z" * 8),
                assistant(stop="error", total=0), assistant(stop="aborted", total=900)]
    assert estimate_context_tokens(messages) == 500 + 2
    assert estimate_context_tokens([user("x" * 40), user("y" * 4)]) == 11


def test_context_usage_semantics() -> None:
    messages = [user("x" * 40), assistant("y", total=500)]
    assert context_usage(messages, 0, False) is None
    assert context_usage(messages, 1000, True) == {"tokens": None, "contextWindow": 1000, "percent": None}
    assert context_usage(messages, 2000, False) == {"tokens": 500, "contextWindow": 2000, "percent": 25.0}
    stale = context_usage(messages, 1000, False, usage_stale=True)
    assert stale is not None and stale["tokens"] == 10 + 1


# --------------------------------------------------------------------------- preparation


def test_small_session_has_nothing_to_compact(tmp_path: Path) -> None:
    sm = new_store(tmp_path)
    turn(sm, 0)
    branch = sm.get_branch()
    assert prepare_compaction(branch, 20000) is None
    with pytest.raises(CompactionError, match=r"^Nothing to compact \(session too small\)$"):
        raise_unpreparable(branch)
    assert prepare_compaction([], 20000) is None
    assert NOTHING_TO_COMPACT == "Nothing to compact (session too small)"


def test_last_entry_compaction_means_already_compacted(tmp_path: Path) -> None:
    sm = new_store(tmp_path)
    ids = turn(sm, 0) + turn(sm, 1)
    sm.append_compaction("summary", ids[4], 123)
    branch = sm.get_branch()
    assert prepare_compaction(branch, 10) is None
    with pytest.raises(CompactionError, match=ALREADY_COMPACTED):
        raise_unpreparable(branch)


def test_keep_recent_budget_cuts_at_a_turn_start(tmp_path: Path) -> None:
    sm = new_store(tmp_path)
    first = turn(sm, 0)
    second = turn(sm, 1)
    # each entry is about 100 tokens: the newest four (one turn) reach a budget of 400 at the user entry
    prep = prepare_compaction(sm.get_branch(), 400)
    assert prep is not None
    assert prep.first_kept_entry_id == second[0]
    assert not prep.is_split_turn and prep.turn_prefix_messages == []
    assert [m["role"] for m in prep.messages_to_summarize] == ["user", "assistant", "toolResult", "assistant"]
    assert prep.previous_summary is None
    assert prep.messages_to_summarize[0] is sm.get_entry(first[0])["message"]  # type: ignore[index]
    assert prep.file_ops.file_lists() == (["src/f0.py"], [])


def test_cut_never_lands_on_a_tool_result_and_splits_the_turn(tmp_path: Path) -> None:
    sm = new_store(tmp_path)
    turn(sm, 0)
    ids = add(sm, user("u" * 400), assistant("a" * 40, [("c1", "read", {"path": "x.py"})]),
              tool_result("c1", "r" * 400), assistant("", [("c2", "edit", {"path": "y.py"})]),
              tool_result("c2", "r" * 400))
    # the budget is reached at the first tool result of the last turn: the cut moves forward to the
    # next cut point, the assistant call, which is inside the turn started by ids[0]
    prep = prepare_compaction(sm.get_branch(), 150)
    assert prep is not None
    assert prep.first_kept_entry_id == ids[3]
    assert prep.is_split_turn
    assert [m["role"] for m in prep.turn_prefix_messages] == ["user", "assistant", "toolResult"]
    assert [m["role"] for m in prep.messages_to_summarize] == ["user", "assistant", "toolResult", "assistant"]
    # file operations come from what is summarised; the kept edit call is still in the context
    assert prep.file_ops.file_lists() == (["src/f0.py", "x.py"], [])


def test_trailing_tool_results_over_budget_keep_their_call(tmp_path: Path) -> None:
    sm = new_store(tmp_path)
    turn(sm, 0)
    ids = add(sm, user("go"), assistant("", [("c9", "read", {"path": "big"})]), tool_result("c9", "r" * 4000))
    prep = prepare_compaction(sm.get_branch(), 100)
    assert prep is not None
    assert prep.first_kept_entry_id == ids[1]
    assert prep.is_split_turn and [m["role"] for m in prep.turn_prefix_messages] == ["user"]


def test_invisible_entries_before_the_cut_stay_with_it(tmp_path: Path) -> None:
    sm = new_store(tmp_path)
    turn(sm, 0)
    change = sm.append_model_change("fake", "other")["id"]
    turn(sm, 1)
    prep = prepare_compaction(sm.get_branch(), 400)
    assert prep is not None and prep.first_kept_entry_id == change


def test_previous_summary_and_its_files_carry_forward(tmp_path: Path) -> None:
    sm = new_store(tmp_path)
    turn(sm, 0)
    kept = turn(sm, 1)
    sm.append_compaction("OLD SUMMARY", kept[0], 999,
                         details={"readFiles": ["old-read.py"], "modifiedFiles": ["old-mod.py"]})
    turn(sm, 2)
    add(sm, assistant("", [("w", "write", {"path": "new.py", "content": "x"})]), tool_result("w", "ok", "write"))
    turn(sm, 3)
    prep = prepare_compaction(sm.get_branch(), 400)
    assert prep is not None
    assert prep.previous_summary == "OLD SUMMARY"
    # summarised: the kept turn 1, turn 2 and the write; never the checkpoint or system messages
    roles = [m["role"] for m in prep.messages_to_summarize]
    assert "compactionSummary" not in roles and "system" not in roles
    assert prep.messages_to_summarize[0]["content"][0]["text"] == "u" * 400
    read, modified = prep.file_ops.file_lists()
    assert read == ["old-read.py", "src/f1.py", "src/f2.py"]
    assert modified == ["new.py", "old-mod.py"]


def test_hook_made_compaction_details_are_not_carried(tmp_path: Path) -> None:
    sm = new_store(tmp_path)
    kept = turn(sm, 0)
    sm.append_compaction("S", kept[0], 1, details={"readFiles": ["hook.py"]}, from_hook=True)
    turn(sm, 1)
    turn(sm, 2)
    prep = prepare_compaction(sm.get_branch(), 400)
    assert prep is not None and "hook.py" not in prep.file_ops.file_lists()[0]


def test_tokens_before_uses_valid_usage_unless_an_edit_came_after(tmp_path: Path) -> None:
    sm = new_store(tmp_path)
    turn(sm, 0)
    add(sm, user("u" * 400), assistant("a" * 40, total=5000), user("n" * 40))
    prep = prepare_compaction(sm.get_branch(), 200)
    assert prep is not None and prep.tokens_before == 5000 + 10
    failed = add(sm, assistant(stop="error"))
    sm.append_context_edit(failed[0], None)
    prep = prepare_compaction(sm.get_branch(), 200)
    assert prep is not None
    assert prep.tokens_before == sum(estimate_message_tokens(m) for m in sm.build_context().messages)


def test_omitted_failed_attempt_at_the_end_moves_the_cut_forward(tmp_path: Path) -> None:
    sm = new_store(tmp_path)
    turn(sm, 0)
    prompt = add(sm, user("u" * 4000))
    failed = add(sm, assistant("partial " * 10, stop="error"))
    sm.append_context_edit(failed[0], None)
    prep = prepare_compaction(sm.get_branch(), 100)
    assert prep is not None
    # the big prompt alone exceeds the budget; keeping from it would keep only a hidden attempt, so
    # the cut moves past the prompt, which is summarised as the prefix of its (split) turn
    assert prep.first_kept_entry_id == failed[0]
    assert prep.is_split_turn
    assert prep.turn_prefix_messages == [sm.get_entry(prompt[0])["message"]]  # type: ignore[index]
