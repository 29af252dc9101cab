"""The entry TypedDicts of coding/session/entries.py describe what the store really writes."""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

from pi_coding_agent.coding.session import SessionEntry, SessionHeader, SessionManager

SHAPES = {typing.get_type_hints(cls)["type"].__args__[0]: cls for cls in typing.get_args(SessionEntry)}


def assert_shape(record: dict[str, Any], shape: Any) -> None:
    keys = set(record)
    assert shape.__required_keys__ <= keys, (record["type"], shape.__required_keys__ - keys)
    assert keys <= shape.__required_keys__ | shape.__optional_keys__, (record["type"], keys - shape.__required_keys__)


def test_every_entry_type_the_store_appends_matches_its_typed_dict(tmp_path: Path) -> None:
    sm = SessionManager.create(tmp_path, tmp_path / "sessions", persist=True, parent_session="/p.jsonl")
    user = sm.append_message({"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 1})
    sm.append_model_change("prov", "model")
    sm.append_thinking_level_change("high")
    sm.append_custom("state", {"n": 1})
    sm.append_custom_message("note", "text", True, details={"d": 1})
    sm.append_label(user["id"], "start")
    sm.append_session_info("a name")
    sm.append_usage("cache_warm", "prov", "model", {"input": 1}, note="warm")
    sm.append_context_edit(user["id"], None)
    sm.append_compaction("summary", user["id"], 10, details={"readFiles": []}, from_hook=True)
    sm.branch_with_summary(user["id"], "left behind", from_hook=False)
    written = [*sm.get_entries()]
    assert {e["type"] for e in written} == set(SHAPES)
    for entry in written:
        assert_shape(entry, SHAPES[entry["type"]])
    assert_shape(sm.header, SessionHeader)
