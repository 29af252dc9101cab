"""Failed built-in tool calls: the ``tool_execution_end`` record of each tool, ours vs pi 1.6.0.

A client decides how to render a tool call from ``isError`` and the shape of ``result`` (pi's bash puts
``isError: true`` inside ``result`` as well as beside it). One model turn calls every built-in tool so
that it fails; both implementations see the same script and the same files.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from tests.support.rpc_compare import Conversation, Scenario, needs_reference, only, play

FAILING_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("bash", {"command": "echo out; echo err >&2; exit 3"}),
    ("read", {"path": "missing.txt"}),
    ("read", {"path": "."}),
    ("edit", {"path": "file.txt", "edits": [{"oldText": "absent", "newText": "x"}]}),
    ("edit", {"path": "missing.txt", "edits": [{"oldText": "a", "newText": "b"}]}),
    ("write", {"path": "folder", "content": "x"}),
    ("grep", {"pattern": "x", "path": "missing-dir"}),
    ("find", {"pattern": "*.txt", "path": "missing-dir"}),
    ("ls", {"path": "missing-dir"}),
    ("bash", {"command": "true", "timeout": "soon"}),  # argument validation fails before the tool runs
]


async def _drive(conversation: Conversation) -> None:
    (conversation.workspace.cwd / "file.txt").write_text("hello\n")
    (conversation.workspace.cwd / "folder").mkdir()
    await conversation.prompt("fail every tool")


SCENARIO = Scenario(
    script=[{"content": [{"type": "toolCall", "id": f"call_{index}", "name": name, "arguments": arguments}
                         for index, (name, arguments) in enumerate(FAILING_CALLS)]},
            {"content": [{"type": "text", "text": "done"}]}],
    drive=_drive,
    args=("--no-session", "--tools", "bash,read,edit,write,grep,find,ls"),
)


def _ends(kind: str, root: Any) -> dict[str, dict[str, Any]]:
    played = asyncio.run(play(kind, SCENARIO, root))
    ends = {record["toolCallId"]: record for record in only(played.records, "tool_execution_end")}
    for record in ends.values():
        record.pop("durationMs", None)
    return ends


def _shape(record: dict[str, Any], cwd: str) -> dict[str, Any]:
    """The record with the working folder and the wall time replaced, so both sides compare as they are."""
    text = json.dumps(record).replace(cwd, "<cwd>")
    loaded: dict[str, Any] = json.loads(text)
    structured = loaded["result"].get("structuredContent")
    if structured and "wall_time_seconds" in structured:
        structured["wall_time_seconds"] = "<seconds>"
    return loaded


@pytest.mark.slow
def test_every_failure_is_an_error_with_text(tmp_path):
    ends = _ends("ours", tmp_path)
    assert len(ends) == len(FAILING_CALLS)
    for record in ends.values():
        assert record["isError"] is True, record
        assert record["result"]["content"][0]["type"] == "text" and record["result"]["content"][0]["text"]
    assert ends["call_0"]["result"]["isError"] is True  # bash's result repeats it, as pi's does


@needs_reference
@pytest.mark.parametrize("index", range(len(FAILING_CALLS)), ids=[f"{n}-{i}" for i, (n, _) in enumerate(FAILING_CALLS)])
def test_same_record_as_reference(tmp_path_factory, index):
    ours, reference = _reference_pair(tmp_path_factory)
    call = f"call_{index}"
    if any(text in json.dumps(reference[call]) for text in NO_USABLE_FD_OR_RG):
        binary = {"find": "fd >= 8.7", "grep": "ripgrep"}[FAILING_CALLS[index][0]]
        pytest.skip(f"accepted difference: the reference finds no {binary} here and cannot download one")
    assert ours[call] == reference[call]


NO_USABLE_FD_OR_RG = ("is not available and could not be downloaded", "--no-require-git")
"""The reference's grep and find run ripgrep and fd from PATH or download them into ~/.pi/agent/bin; no
download is reachable here, and a system fd older than 8.7 (Debian 12's fdfind is 8.6) rejects the
``--no-require-git`` it passes. No package registry reachable here ships an fd >= 8.7 that runs on
Debian 12 (trixie's needs glibc 2.39; npm's ``fd-find`` downloads at install), so there the
reference's find error is about its missing fd and cannot be compared. On a machine with fd >= 8.7 on
PATH the case runs."""


_PAIR: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}


def _reference_pair(tmp_path_factory: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """Both runs once for all parametrised cases (each costs a process start per implementation)."""
    if "pair" not in _PAIR:
        root = tmp_path_factory.mktemp("tool-errors")
        sides = []
        for kind in ("ours", "reference"):
            ends = _ends(kind, root)
            cwd = str(root / kind / "work")
            sides.append({call: _shape(record, cwd) for call, record in ends.items()})
        _PAIR["pair"] = (sides[0], sides[1])
    return _PAIR["pair"]
