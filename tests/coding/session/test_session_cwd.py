"""A session recorded in another directory: tools, context files, prompt templates and trust are that
directory's, with ``--session`` at start-up and with ``switch_session``; a vanished directory is refused
with pi's message (exit 1 at start-up, an error response on switch). Ours alone, then beside the reference."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.fakes.llm_server import FakeLLMServer
from tests.support.rpc_compare import Conversation, Workspace, needs_reference

HEADER_ID = "0190a000-0000-7000-8000-000000000001"


def _bash(command: str) -> dict[str, Any]:
    return {"content": [{"type": "toolCall", "id": "call_1", "name": "bash", "arguments": {"command": command}}]}


def _reply(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}]}


@dataclass
class Seen:
    """What one run showed, with the run's root directory written as ``ROOT``."""

    switch: dict[str, Any] | None
    pwd: str
    context_files: list[str]
    commands: list[str]
    exit_error: str | None = None


def _foreign_session(ws: Workspace, missing: bool) -> Path:
    """A session file whose header records ``other/`` (a project with its own AGENTS.md and template)."""
    other = ws.root / "other"
    (other / ".pi" / "prompts").mkdir(parents=True)
    (other / "AGENTS.md").write_text("OTHER PROJECT CONTEXT")
    (other / ".pi" / "prompts" / "other-template.md").write_text("from the other project")
    (ws.cwd / "AGENTS.md").write_text("START PROJECT CONTEXT")
    session = ws.root / "foreign.jsonl"
    session.write_text(json.dumps({"type": "session", "version": 3, "id": HEADER_ID,
                                   "timestamp": "2026-01-01T00:00:00.000Z", "cwd": str(other)}) + "\n")
    if missing:
        shutil.rmtree(other)
    return session


async def _play(kind: str, root: Path, how: str, missing: bool = False, *args: str) -> Seen:
    """``how`` is ``"start"`` (``--session <file>``) or ``"switch"`` (``switch_session`` after start-up)."""
    with FakeLLMServer() as server:
        server.add(_bash("pwd"), _reply("done"))
        ws = Workspace.create(root / kind, server.url)
        session = _foreign_session(ws, missing)
        proc = await ws.spawn(kind, *args, *(("--session", str(session)) if how == "start" else ("--no-session",)))
        talk = Conversation(proc, server, ws)
        base = str(ws.root)
        try:
            if how == "start" and missing:
                return Seen(None, "", [], [], exit_error=await _startup_failure(proc, base))
            switch = None
            if how == "switch":
                switch = await talk.request({"type": "switch_session", "sessionPath": str(session)})
                switch = json.loads(json.dumps(switch).replace(base, "ROOT"))
            commands = (await talk.request({"type": "get_commands"}))["data"]["commands"]
            records = await talk.prompt("where are you?")
        finally:
            await proc.kill()
        pwd = next(r["result"]["content"][0]["text"] for r in records if r["type"] == "tool_execution_end")
        body = json.dumps(server.requests[0])
        return Seen(switch, pwd.strip().replace(base, "ROOT"),
                    [name for name in ("OTHER", "START") if f"{name} PROJECT CONTEXT" in body],
                    sorted(c["name"] for c in commands if not c["sourceInfo"]["path"].startswith("builtin:")))


async def _startup_failure(proc: Any, base: str) -> str:
    status = await proc.wait()
    assert status == 1
    return str((await proc.stderr_text()).strip().replace(base, "ROOT"))


@pytest.mark.slow
async def test_session_flag_works_in_the_recorded_directory(tmp_path: Path) -> None:
    seen = await _play("ours", tmp_path, "start")
    assert seen.pwd == "ROOT/other"
    assert seen.context_files == ["OTHER"]
    assert seen.commands == []  # that project's own resources wait for its trust, as in pi


async def test_switch_session_moves_tools_and_resources(tmp_path: Path) -> None:
    seen = await _play("ours", tmp_path, "switch")
    assert seen.switch is not None and seen.switch["data"] == {"cancelled": False}
    assert seen.pwd == "ROOT/other"
    assert seen.context_files == ["OTHER"]


@pytest.mark.slow
async def test_vanished_directory_is_refused(tmp_path: Path) -> None:
    start = await _play("ours", tmp_path / "start", "start", missing=True)
    assert start.exit_error == ("Stored session working directory does not exist: ROOT/other\n"
                                "Session file: ROOT/foreign.jsonl\nCurrent working directory: ROOT/work")
    switch = await _play("ours", tmp_path / "switch", "switch", missing=True)
    assert switch.switch is not None and switch.switch["success"] is False
    assert switch.switch["error"] == start.exit_error
    assert switch.pwd == "ROOT/work" and switch.context_files == ["START"]  # nothing moved


@needs_reference
@pytest.mark.parametrize(("how", "missing", "args"), [
    ("start", False, ()), ("switch", False, ()), ("switch", False, ("-a",)), ("start", True, ()),
    ("switch", True, ())])
async def test_foreign_session_matches_reference(tmp_path: Path, how: str, missing: bool,
                                                 args: tuple[str, ...]) -> None:
    ours = await _play("ours", tmp_path, how, missing, *args)
    reference = await _play("reference", tmp_path, how, missing, *args)
    assert ours == reference
