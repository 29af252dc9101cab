"""MCP servers follow a session into another directory (``switch_session``), as pi rebuilds its MCP
extension there: the old directory's server processes are gone when the switch answers, the new
directory's ``.pi/mcp.json`` starts under that directory's trust, a server configured in both places
restarts in the new directory, and a switch back brings the first set back. The real ``pi --mode
rpc`` over pipes with real stdio MCP servers (our echo server and npm's server-everything); each
server logs ``<name> <pid> <cwd>`` when it starts. Ours alone, then beside the reference."""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.support.fakes.llm_server import FakeLLMServer
from tests.support.requirements import EVERYTHING
from tests.support.rpc_compare import Conversation, Workspace, needs_reference
from tests.support.rpc_helpers import PYTHON, ROOT

pytestmark = pytest.mark.timeout(240)
BUILTIN = {"read", "bash", "edit", "write"}

needs_everything = pytest.mark.mcp_everything


def _logged(log: Path, name: str, *command: str) -> dict[str, Any]:
    """A stdio server that appends ``name pid cwd`` to ``log`` and becomes ``command`` (same pid);
    only its ``echo`` tool is declared to the model."""
    return {"command": "sh", "args": ["-c", f'echo "{name} $$ $(pwd)" >> {log}; exec "$@"', "sh", *command],
            "env": {"PYTHONPATH": str(ROOT)}, "exposure": "hidden", "toolExposure": {"echo": "direct"}}


def _fake(log: Path, name: str, exposure: str | None = None) -> dict[str, Any]:
    """Our stdio echo server (these tests start dozens: it starts in milliseconds, the FastMCP one
    that ``test_mcp_rpc`` checks the protocol with in a second of CPU); with ``exposure``, its tools
    have that exposure instead."""
    entry = _logged(log, name, PYTHON, "-m", "tests.support.fakes.mcp_echo_server")
    if exposure is not None:
        entry.update(exposure=exposure, toolExposure={})
    return entry


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@dataclass
class Seen:
    """Per step: the tools the model was given (beyond the four built-in ones) and the live servers
    (``name ROOT/dir``)."""

    steps: list[tuple[str, list[str], list[str]]] = field(default_factory=list)
    left_running: list[str] = field(default_factory=list)  # servers alive before and after a move's answer
    started: list[str] = field(default_factory=list)  # every server start, in order
    stderr: str = ""


Move = tuple[str, Any]  # ("switch", "other" | "work") or ("new", {place: mcp.json entries} written first)
SWITCHES: list[Move] = [("switch", "other"), ("switch", "work")]


def _session(ws: Workspace, name: str, cwd: Path, number: int) -> Path:
    path = ws.root / name
    path.write_text(json.dumps({"type": "session", "version": 3, "id": f"0190a000-0000-7000-8000-00000000000{number}",
                                "timestamp": "2026-01-01T00:00:00.000Z", "cwd": str(cwd)}) + "\n")
    return path


async def _play(kind: str, root: Path, servers: dict[str, dict[str, Any]], *args: str,
                moves: list[Move] = SWITCHES, extension: str | None = None) -> Seen:
    """``servers`` maps ``global``/``work``/``other`` to the mcp.json entries of that place (a
    ``{log}`` placeholder in an entry, or in the ``-e`` ``extension`` source, is the start log);
    start in work, then a prompt after each move (by default: switch to other, switch back)."""
    with FakeLLMServer() as server:
        server.add(*({"content": [{"type": "text", "text": "ok"}]} for _ in range(3)))
        ws = Workspace.create(root / kind, server.url)
        log = ws.root / "started.log"
        other = ws.root / "other"
        other.mkdir()
        places = {"global": ws.agent_dir / "mcp.json", "work": ws.cwd / ".pi" / "mcp.json",
                  "other": other / ".pi" / "mcp.json"}

        def write(files: dict[str, dict[str, Any]]) -> None:
            for place, entries in files.items():
                places[place].parent.mkdir(parents=True, exist_ok=True)
                places[place].write_text(json.dumps({"mcpServers": entries}).replace("{log}", str(log)))

        write(servers)
        sessions = {"other": _session(ws, "other.jsonl", other, 1), "work": _session(ws, "back.jsonl", ws.cwd, 2)}
        if extension is not None:  # Python source for ours, TypeScript for the reference
            source = ws.root / ("ext.py" if kind == "ours" else "ext.ts")
            source.write_text(extension.replace("{log}", str(log)))
            args = (*args, "-e", str(source))
        proc = await ws.spawn(kind, "--no-session", *args)
        talk = Conversation(proc, server, ws)
        seen = Seen()
        base = str(ws.root)

        def started() -> list[tuple[int, str]]:
            lines = log.read_text().splitlines() if log.exists() else []
            return [(int(line.split()[1]), " ".join(line.split()[::2]).replace(base, "ROOT")) for line in lines]

        async def step(label: str) -> None:
            await talk.prompt("hi")  # the first prompt in a directory waits for its direct servers
            tools = sorted(t["function"]["name"] for t in server.requests[-1]["body"].get("tools", [])
                           if t["function"]["name"] not in BUILTIN)
            live = None
            for _ in range(40):  # servers nobody waited for (not direct) may still be starting: let the set settle
                previous, live = live, sorted(name for pid, name in started() if _alive(pid))
                if live == previous:
                    break
                await asyncio.sleep(0.25)
            seen.steps.append((label, tools, live or []))

        async def move(kind: str, target: Any) -> None:
            before = [(pid, name) for pid, name in started() if _alive(pid)]
            if kind == "new":
                write(target)
                command = {"type": "new_session"}
            else:
                command = {"type": "switch_session", "sessionPath": str(sessions[target])}
            response = await talk.request(command)
            assert response["success"] is True, response
            seen.left_running += [name for pid, name in before if _alive(pid)]

        try:
            await step("start")
            for kind_of_move, target in moves:
                await move(kind_of_move, target)
                await step(target if kind_of_move == "switch" else "new")
        finally:
            await proc.kill()
        seen.started = [name for _, name in started()]
        seen.stderr = await proc.stderr_text()
        return seen


def _trusted_layout() -> dict[str, dict[str, Any]]:
    log = Path("{log}")
    return {"global": {"shared": _fake(log, "shared")},
            "work": {"alpha": _fake(log, "alpha"), "both": _fake(log, "both-work")},
            "other": {"beta": _fake(log, "beta"), "both": _fake(log, "both-other")}}


def _untrusted_layout() -> dict[str, dict[str, Any]]:
    log = Path("{log}")
    return {"global": {"shared": _fake(log, "shared")}, "other": {"beta": _fake(log, "beta")}}


def _discovery_layout() -> dict[str, dict[str, Any]]:
    """Servers reached through ``codemode`` and ``tool_search`` in work, a direct one in other."""
    log = Path("{log}")
    return {"work": {"cm": _fake(log, "cm", "codemode"), "df": _fake(log, "df", "deferred")},
            "other": {"dir": _fake(log, "dir", "hidden") | {"toolExposure": {"echo": "direct"}}}}


def _everything_layout() -> dict[str, dict[str, Any]]:
    log = Path("{log}")
    return {"global": {"everything": _logged(log, "everything", str(EVERYTHING), "stdio")},
            "other": {"beta": _fake(log, "beta")}}


@pytest.mark.slow
async def test_switch_restarts_servers_for_the_new_directory(tmp_path: Path) -> None:
    seen = await _play("ours", tmp_path, _trusted_layout(), "-a")
    assert seen.steps == [
        ("start", ["mcp__alpha__echo", "mcp__both__echo", "mcp__shared__echo"],
         ["alpha ROOT/work", "both-work ROOT/work", "shared ROOT/work"]),
        ("other", ["mcp__beta__echo", "mcp__both__echo", "mcp__shared__echo"],
         ["beta ROOT/other", "both-other ROOT/other", "shared ROOT/other"]),
        ("work", ["mcp__alpha__echo", "mcp__both__echo", "mcp__shared__echo"],
         ["alpha ROOT/work", "both-work ROOT/work", "shared ROOT/work"]),
    ]
    assert seen.left_running == []  # stopped before the switch answered: no orphan, no stale tool
    assert sorted(seen.started).count("shared ROOT/work") == 2  # the global server restarted each time


@pytest.mark.slow
async def test_untrusted_directory_starts_none_of_its_servers(tmp_path: Path) -> None:
    seen = await _play("ours", tmp_path, _untrusted_layout())
    assert [step[1:] for step in seen.steps] == [
        (["mcp__shared__echo"], ["shared ROOT/work"]),
        (["mcp__shared__echo"], ["shared ROOT/other"]),
        (["mcp__shared__echo"], ["shared ROOT/work"]),
    ]
    assert "beta ROOT/other" not in seen.started and seen.left_running == []


@pytest.mark.slow
async def test_codemode_and_tool_search_follow_the_directory(tmp_path: Path) -> None:
    seen = await _play("ours", tmp_path, _discovery_layout(), "-a")
    assert seen.steps == [
        ("start", ["codemode", "tool_search"], ["cm ROOT/work", "df ROOT/work"]),
        ("other", ["mcp__dir__echo"], ["dir ROOT/other"]),  # codemode was the servers', not defaultTools'
        ("work", ["codemode", "tool_search"], ["cm ROOT/work", "df ROOT/work"]),
    ]
    assert seen.left_running == []


@needs_everything
@pytest.mark.slow
async def test_third_party_server_is_stopped_and_restarted(tmp_path: Path) -> None:
    seen = await _play("ours", tmp_path, _everything_layout(), "-a")
    assert [step[1:] for step in seen.steps] == [
        (["mcp__everything__echo"], ["everything ROOT/work"]),
        (["mcp__beta__echo", "mcp__everything__echo"], ["beta ROOT/other", "everything ROOT/other"]),
        (["mcp__everything__echo"], ["everything ROOT/work"]),
    ]
    assert seen.left_running == []


def _edited() -> list[Move]:
    """new_session twice in work: first with mcp.json unchanged, then after the user file was edited
    (``shared`` replaced by ``fresh``)."""
    log = Path("{log}")
    return [("new", {}), ("new", {"global": {"fresh": _fake(log, "fresh")}})]


@pytest.mark.slow
async def test_new_session_applies_an_edited_mcp_json(tmp_path: Path) -> None:
    seen = await _play("ours", tmp_path, _untrusted_layout(), moves=_edited())
    assert seen.steps == [
        ("start", ["mcp__shared__echo"], ["shared ROOT/work"]),
        ("new", ["mcp__shared__echo"], ["shared ROOT/work"]),
        ("new", ["mcp__fresh__echo"], ["fresh ROOT/work"]),
    ]
    # unchanged files keep the connection (pi restarts every server on every replacement)
    assert seen.left_running == ["shared ROOT/work"]
    assert seen.started == ["shared ROOT/work", "fresh ROOT/work"]


@pytest.mark.slow
async def test_extension_servers_are_registered_again(tmp_path: Path) -> None:
    """An ``-e`` extension's server: kept across a same-directory replacement (its setup registers the
    same config again), restarted in another directory with the other servers."""
    extension = f"def setup(pi):\n    pi.register_mcp_server('ext', {_fake(Path('{log}'), 'ext')!r})\n"
    seen = await _play("ours", tmp_path, {}, moves=[("new", {}), ("switch", "other")], extension=extension)
    assert seen.steps == [("start", ["mcp__ext__echo"], ["ext ROOT/work"]),
                          ("new", ["mcp__ext__echo"], ["ext ROOT/work"]),
                          ("other", ["mcp__ext__echo"], ["ext ROOT/other"])]
    assert seen.left_running == ["ext ROOT/work"]  # the new_session; the switch stopped it
    assert seen.started == ["ext ROOT/work", "ext ROOT/other"]
    assert "overridden" not in seen.stderr


@needs_reference
async def test_new_session_matches_reference(tmp_path: Path) -> None:
    ours = await _play("ours", tmp_path, _untrusted_layout(), moves=_edited())
    reference = await _play("reference", tmp_path, _untrusted_layout(), moves=_edited())
    assert ours.steps == reference.steps
    assert reference.left_running == [] and reference.started.count("shared ROOT/work") == 2


@needs_reference
@pytest.mark.parametrize("layout", ["trusted", "untrusted", "discovery",
                                    pytest.param("everything", marks=needs_everything)])
async def test_switch_matches_reference(tmp_path: Path, layout: str) -> None:
    servers, args = {"trusted": (_trusted_layout(), ("-a",)), "untrusted": (_untrusted_layout(), ()),
                     "discovery": (_discovery_layout(), ("-a",)), "everything": (_everything_layout(), ("-a",))}[layout]
    ours = await _play("ours", tmp_path, servers, *args)
    reference = await _play("reference", tmp_path, servers, *args)
    assert ours.steps == reference.steps
    assert ours.left_running == reference.left_running == []
    assert sorted(ours.started) == sorted(reference.started)
