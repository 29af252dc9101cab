"""``pi --fork`` of a file pi did not write itself (CRLF line ends, a writer's spacing) writes the same
entry lines on both sides: each entry as ``JSON.stringify`` writes it, not the source's bytes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pi_coding_agent.coding.session import SessionManager, storage
from tests.support.cli_sides import needs_reference, rpc_turns
from tests.support.fixtures.sessions.builders import assistant, user


def _source(tmp_path: Path, shape: str) -> Path:
    sm = SessionManager.create(tmp_path, tmp_path / "made")
    for turn in range(3):
        sm.append_message(user(f"question {turn}: ünï \u2028"))
        sm.append_message(assistant(f"answer {turn}"))
    sm.append_label(sm.entries[0]["id"], "start")
    assert sm.session_file is not None
    records = storage.read_records(sm.session_file)
    if shape == "crlf":
        data = sm.session_file.read_bytes().replace(b"\n", b"\r\n")
    else:
        data = "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records).encode()
    source = tmp_path / f"{shape}.jsonl"
    source.write_bytes(data)
    return source


def _forked_lines(kind: str, source: Path, home: Path) -> list[bytes]:
    """The source's entries as the fork wrote them (start-up then appends its own settings entries)."""
    sessions = home / "sessions"
    env = {**os.environ, "HOME": str(home), "PI_CODING_AGENT_DIR": str(home / "agent"), "PI_OFFLINE": "1"}
    rpc_turns(kind, ["--fork", str(source), "--session-dir", str(sessions)], env, home,
              [{"id": "s", "type": "get_state"}])
    [written] = sessions.glob("*.jsonl")
    count = len(storage.read_records(source)) - 1
    return written.read_bytes().split(b"\n")[1 : 1 + count]  # the header differs (its id, time and cwd)


@needs_reference
@pytest.mark.parametrize("shape", ["crlf", "spaced"])
def test_fork_writes_each_entry_again_as_the_reference_does(tmp_path: Path, shape: str) -> None:
    source = _source(tmp_path, shape)
    sides = {}
    for kind in ("ours", "reference"):
        home = tmp_path / kind
        (home / "agent").mkdir(parents=True)
        sides[kind] = _forked_lines(kind, source, home)
    assert sides["ours"] == sides["reference"]
    assert b"\r" not in b"".join(sides["ours"]) and b'", "' not in b"".join(sides["ours"])
