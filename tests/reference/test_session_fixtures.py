"""Session files written by the reference pi open here exactly as the reference reports them, and
files written here open in the reference pi with the same projected context."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pi_coding_agent.coding.session import SessionManager
from tests.support.fixtures.sessions.builders import assistant, bash, system, tool_result, user
from tests.support.reference_pi import REFERENCE_PI, REFERENCE_ROOT

FIXTURES = Path(__file__).parents[1] / "support" / "fixtures" / "sessions"


def _expected(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{name}.expected.json").read_text())


@pytest.mark.parametrize("name", sorted(p.stem for p in FIXTURES.glob("*.jsonl")))
def test_reference_file_opens_as_reference_reports(name: str, tmp_path: Path) -> None:
    expected = _expected(name)
    sm = SessionManager.open(FIXTURES / f"{name}.jsonl", tmp_path)
    context = sm.build_context()
    assert sm.get_entries() == expected["entries"]
    assert sm.leaf_id == expected["leafId"]
    assert sm.get_tree() == expected["tree"]
    assert context.messages == expected["messages"]
    assert sm.session_name == expected["sessionName"]
    assert sm.get_fork_messages() == expected["forkMessages"]
    assert context.model == tuple(expected["model"])
    assert context.thinking_level == expected["thinkingLevel"]
    reference_stats = {k: v for k, v in expected["stats"].items() if k not in ("sessionFile", "sessionId")}
    assert sm.stats() == reference_stats
    assert str(sm.cwd) == sm.header["cwd"] == "/tmp/h6/proj"


def test_reference_fork_matches_our_fork(tmp_path: Path) -> None:
    """Forking before the second user message of ``basic`` gives the entries pi's fork wrote."""
    source = tmp_path / "basic.jsonl"
    source.write_bytes((FIXTURES / "basic.jsonl").read_bytes())
    sm = SessionManager.open(source, tmp_path)
    second_user = sm.get_fork_messages()[1]["entryId"]
    forked = sm.fork(second_user, "before")
    assert forked.header["parentSession"] == str(source)
    assert forked.get_entries() == _expected("fork")["entries"]
    assert forked.session_file is not None and forked.session_file.parent == tmp_path
    assert SessionManager.open(forked.session_file, tmp_path).get_entries() == forked.get_entries()


def test_reference_clone_keeps_labels(tmp_path: Path) -> None:
    """Cloning ``tree_ext`` at its leaf re-chains around label entries and re-creates the label."""
    source = tmp_path / "tree.jsonl"
    source.write_bytes((FIXTURES / "tree_ext.jsonl").read_bytes())
    sm = SessionManager.open(source, tmp_path)
    labelled = next(e for e in sm.entries if e["type"] == "label")
    target = sm.get_entry(labelled["targetId"])
    assert target is not None
    clone = sm.fork(sm.leaf_id, "at")
    # the label target is no longer on the active path (tree navigation left it), so no label copied
    assert [e["type"] for e in clone.entries if e["type"] == "label"] == []
    assert [e["id"] for e in clone.entries] == [e["id"] for e in sm.get_branch()]
    # cloning the labelled branch copies the label after the path, chained below its last entry
    sm.branch(labelled["id"])
    clone = sm.fork(labelled["id"], "at")
    assert clone.entries[-1]["type"] == "label" and clone.entries[-1]["targetId"] == target["id"]
    assert clone.entries[-1]["parentId"] == clone.entries[-2]["id"] != labelled["id"]
    assert clone.labels == {target["id"]: {"label": "checkpoint one", "timestamp": labelled["timestamp"]}}


# ----------------------------------------------------------------------------- files written here


def _session_with_everything(cwd: Path) -> tuple[SessionManager, SessionManager]:
    """Two sessions: one ending after a compaction with context edits, one after a branch summary."""
    sm = SessionManager.create(cwd, cwd / "sessions")
    sm.append_session_info("ours")
    sm.append_model_change("mock", "mock-model")
    sm.append_thinking_level_change("low")
    sm.append_message(system(preamble="You are a test.", tools="<tools>read</tools>"))
    first = sm.append_message(user("first"))
    sm.append_message(assistant(tool_call="call_1"))
    sm.append_message(tool_result("call_1", "file body"))
    reply = sm.append_message(assistant("done reading"))
    sm.append_message(bash("ls", "a.txt\n", 2))
    sm.append_custom("state", {"n": 1})
    note = sm.append_custom_message("note", "a note", True, {"k": 1})
    sm.append_label(reply["id"], "mark")
    sm.append_context_edit(reply["id"], {"content": "edited reply"})
    sm.append_context_edit(note["id"], None)
    second = sm.append_message(user("second"))
    sm.append_message(assistant("reply two"))
    sm.append_compaction("SUMMARY", second["id"], 1234)
    sm.append_message(user("third"))
    sm.append_message(assistant("reply three"))
    assert sm.session_file is not None
    branched = SessionManager.open(sm.session_file, cwd).fork(sm.leaf_id, "at")
    branched.branch(reply["id"])
    branched.branch_with_summary(first["id"], "left a branch")
    branched.append_message(user("fourth"))
    branched.append_message(assistant("reply four"))
    return sm, branched


class ReferencePi:
    """The reference pi in RPC mode, in a scratch HOME, answering one command at a time."""

    def __init__(self, cwd: Path, home: Path) -> None:
        node_bin = REFERENCE_ROOT / "node22" / "node_modules" / ".bin"
        env = dict(os.environ, HOME=str(home), PATH=f"{node_bin}:{os.environ['PATH']}")
        self.proc = subprocess.Popen([str(REFERENCE_PI), "--mode", "rpc", "--session-dir", str(cwd / "ref")],
                                     cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        self.count = 0

    def call(self, kind: str, **fields: Any) -> Any:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.count += 1
        command_id = f"t{self.count}"
        self.proc.stdin.write(json.dumps({"id": command_id, "type": kind, **fields}).encode() + b"\n")
        self.proc.stdin.flush()
        while line := self.proc.stdout.readline():
            record = json.loads(line)
            if record.get("type") == "response" and record.get("id") == command_id:
                assert record["success"], record
                return record.get("data")
        raise AssertionError("reference pi exited")

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


@pytest.mark.reference
def test_our_files_open_identically_in_reference_pi(tmp_path: Path) -> None:
    sessions = _session_with_everything(tmp_path)
    assert sessions[1].session_file is not None
    forked = SessionManager.fork_from(sessions[1].session_file, tmp_path, tmp_path / "forks")  # lines copied
    home = tmp_path / "home"
    home.mkdir()
    pi = ReferencePi(tmp_path, home)
    try:
        for sm in (*sessions, forked):
            assert sm.session_file is not None
            assert pi.call("switch_session", sessionPath=str(sm.session_file)) == {"cancelled": False}
            reopened = SessionManager.open(sm.session_file, tmp_path)
            assert pi.call("get_messages")["messages"] == reopened.build_context().messages
            assert pi.call("get_tree") == {"tree": reopened.get_tree(), "leafId": reopened.leaf_id}
            assert pi.call("get_entries")["entries"] == reopened.get_entries()
            assert pi.call("get_state")["sessionName"] == "ours"
    finally:
        pi.close()
