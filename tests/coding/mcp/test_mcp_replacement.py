"""What a client hears from the MCP support across session replacements, and what an extension's
servers become, as pi 1.6.0 does it: pi rebuilds its MCP support at every session start, so the
"need attention" report (config errors, failed servers, sign-ins) and the unreachable-tools warning
come again after ``new_session``, ``switch_session`` and ``fork``, and a server an extension does
not register again is gone. Ours keeps healthy connections in the same directory, yet says the same
things at the same points, retries the servers that are not connected, and drops the servers no
extension registered again. The real ``pi --mode rpc`` over pipes with real stdio servers (our
FastMCP one), each logging ``<name> <pid> <cwd>`` when it starts; ours alone, then beside pi."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.coding.mcp.test_mcp_switch import _alive, _fake, _play, _session
from tests.support.fakes.llm_server import FakeLLMServer
from tests.support.rpc_compare import Conversation, Record, Workspace, needs_reference

pytestmark = pytest.mark.timeout(300)
REPORT_WAIT_S = 30.0  # a report comes once every connection attempt settled (a Python server takes ~1 s)
UNREACHABLE = "MCP tools are only reachable"


@dataclass
class Heard:
    """Per point (start, then after each replacement): the MCP notifications, in order."""

    points: list[tuple[str, list[tuple[str, str]]]] = field(default_factory=list)
    started: list[str] = field(default_factory=list)  # every server start (``name ROOT/dir``), in order
    left_running: list[str] = field(default_factory=list)  # server processes alive after the kill


def _mcp_notices(records: list[Record], root: Path) -> list[tuple[str, str]]:
    return [(r["notifyType"], r["message"].replace(str(root), "ROOT")) for r in records
            if r.get("type") == "extension_ui_request" and r.get("method") == "notify"
            and str(r.get("message")).startswith(("MCP", UNREACHABLE))]


def _config(log: Path) -> dict[str, Any]:
    """The user's mcp.json: a healthy server, one that cannot start, one that starts and exits (it
    logs each attempt), an invalid entry, and a codemode server nothing can reach."""
    return {"autoEnableCodemode": False, "mcpServers": {
        "good": _fake(log, "good"),
        "gone": {"command": "/nonexistent/server"},
        "flaky": {"command": "sh", "args": ["-c", f'echo "flaky $$ $(pwd)" >> {log}; exit 3']},
        "bad name": {"command": "x"},
        "hid": _fake(log, "hid", "codemode")}}


def _is_report(record: Record) -> bool:
    return str(record.get("message", "")).startswith("MCP servers need attention")


async def _notices_after(talk: Conversation, command: dict[str, Any]) -> list[tuple[str, str]]:
    """The MCP notifications from sending ``command`` up to its response and the "need attention"
    report (none within ``REPORT_WAIT_S``: the list lacks it)."""
    await talk.send(command)
    records = await talk.read_until(lambda r: r["type"] == "response")
    if not any(map(_is_report, records)):
        with contextlib.suppress(TimeoutError):
            records += await asyncio.wait_for(talk.read_until(_is_report), REPORT_WAIT_S)
    return _mcp_notices(records, talk.workspace.root)


async def _hear(kind: str, root: Path) -> Heard:
    """Start in work, prompt once, then new_session, switch_session to a session of work, to one of
    another directory (with a failing server of its own) and back, and fork: after each, every
    record up to the "need attention" report (or nothing within ``REPORT_WAIT_S``)."""
    with FakeLLMServer() as server:
        server.add({"content": [{"type": "text", "text": "ok"}]})
        ws = Workspace.create(root / kind, server.url)
        log = ws.root / "started.log"
        other = ws.root / "other"
        (other / ".pi").mkdir(parents=True)
        (ws.agent_dir / "mcp.json").write_text(json.dumps(_config(log)))
        (other / ".pi" / "mcp.json").write_text(json.dumps({"mcpServers": {"worse": {"command": "/nonexistent/w"}}}))
        sessions = {"other": _session(ws, "other.jsonl", other, 1), "work": _session(ws, "back.jsonl", ws.cwd, 2)}
        proc = await ws.spawn(kind, "--no-session", "-a")
        talk = Conversation(proc, server, ws)
        heard = Heard()

        async def point(label: str, command: dict[str, Any]) -> None:
            heard.points.append((label, await _notices_after(talk, command)))

        def pids() -> list[tuple[int, str]]:
            lines = log.read_text().splitlines() if log.exists() else []
            return [(int(line.split()[1]), " ".join(line.split()[::2]).replace(str(ws.root), "ROOT")) for line in lines]

        try:
            await point("start", {"type": "get_state"})
            await talk.prompt("hi")
            await point("new", {"type": "new_session"})
            await point("resume-same", {"type": "switch_session", "sessionPath": str(sessions["work"])})
            await point("resume-other", {"type": "switch_session", "sessionPath": str(sessions["other"])})
            await point("resume-back", {"type": "switch_session", "sessionPath": str(sessions["work"])})
            await talk.prompt("hi")
            forkable = (await talk.request({"type": "get_fork_messages"}))["data"]["messages"]
            await point("fork", {"type": "fork", "entryId": forkable[-1]["entryId"]})
        finally:
            await proc.kill()
        heard.started = [name for _, name in pids()]
        for _ in range(40):  # a killed pi's servers see their stdin close and exit
            heard.left_running = [name for pid, name in pids() if _alive(pid)]
            if not heard.left_running:
                break
            await asyncio.sleep(0.25)
        return heard


def _attention(*lines: str) -> tuple[str, str]:
    body = "\n".join(f"  {line}" for line in (
        'config: ROOT/agent/mcp.json: invalid server name "bad name" (use letters, digits, "_" and "-")', *lines))
    return "warning", f"MCP servers need attention:\n{body}\nRun /mcp to fix."


WARNED = ("warning", f"{UNREACHABLE} from the codemode or tool_search tool, but neither is active "
          "(autoEnableCodemode is false); they cannot be called.")


def _expected(flaky: str) -> list[tuple[str, list[tuple[str, str]]]]:
    work = [WARNED, _attention("gone: failed: spawn /nonexistent/server ENOENT", flaky)]
    other = [WARNED, _attention("gone: failed: spawn /nonexistent/server ENOENT", flaky,
                                "worse: failed: spawn /nonexistent/w ENOENT")]
    return [("start", work), ("new", work), ("resume-same", work), ("resume-other", other),
            ("resume-back", work), ("fork", work)]


def _flaky_line(heard: Heard) -> str:
    """The report line of the server that exits at once: its wording is the transport's."""
    message = heard.points[0][1][-1][1]
    return next(line.strip() for line in message.splitlines() if line.strip().startswith("flaky: failed:"))


@pytest.mark.slow
async def test_every_replacement_reports_again_without_restarting_healthy_servers(tmp_path: Path) -> None:
    heard = await _hear("ours", tmp_path)
    assert heard.points == _expected(_flaky_line(heard))
    # the healthy servers run once per stay in a directory; the failing one is tried at every point
    assert heard.started.count("good ROOT/work") == 2 and heard.started.count("hid ROOT/work") == 2
    assert heard.started.count("good ROOT/other") == 1
    assert heard.started.count("flaky ROOT/work") == 5 and heard.started.count("flaky ROOT/other") == 1
    assert heard.left_running == []


def _same_wording(heard: Heard) -> list[tuple[str, list[tuple[str, str]]]]:
    """The points with the exited server's error made one text: pi words it after whichever write or
    read failed first (``write EPIPE``, ``Connection closed``, changing from one attempt to the
    next), ours as the closed connection."""
    return [(label, [(kind, re.sub(r"flaky: failed: [^\n]*", "flaky: failed: <exited>", text))
                     for kind, text in notices]) for label, notices in heard.points]


@needs_reference
async def test_reports_match_reference(tmp_path: Path) -> None:
    ours = await _hear("ours", tmp_path)
    reference = await _hear("reference", tmp_path)
    assert _same_wording(ours) == _same_wording(reference) == _expected("flaky: failed: <exited>")
    assert sorted(set(ours.started)) == sorted(set(reference.started))
    assert [name for name in reference.started if name.startswith("flaky")] == \
        [name for name in ours.started if name.startswith("flaky")]
    assert reference.started.count("good ROOT/work") == 5  # pi restarts every server at every point
    assert ours.left_running == reference.left_running == []


# --------------------------------------------------------------------------- extension servers

def _extension(kind: str) -> str:
    """``kept`` is registered whenever the extension loads; ``once`` only by the first session start."""
    kept, once = _fake(Path("{log}"), "kept"), _fake(Path("{log}"), "once")
    if kind == "ours":
        return (f"def setup(pi):\n    pi.register_mcp_server('kept', {kept!r})\n\n"
                "    def started(event, ctx):\n        if event['reason'] == 'startup':\n"
                f"            pi.register_mcp_server('once', {once!r})\n\n    pi.on('session_start', started)\n")
    return (f"export default function (pi: any) {{\n  pi.registerMcpServer('kept', {json.dumps(kept)});\n"
            "  pi.on('session_start', (event: any) => {\n"
            f"    if (event.reason === 'startup') pi.registerMcpServer('once', {json.dumps(once)});\n  }});\n}}\n")


@pytest.mark.slow
async def test_a_server_not_registered_again_is_dropped(tmp_path: Path) -> None:
    seen = await _play("ours", tmp_path, {}, moves=[("new", {}), ("new", {})], extension=_extension("ours"))
    assert seen.steps == [("start", ["mcp__kept__echo", "mcp__once__echo"], ["kept ROOT/work", "once ROOT/work"]),
                          ("new", ["mcp__kept__echo"], ["kept ROOT/work"]),
                          ("new", ["mcp__kept__echo"], ["kept ROOT/work"])]
    assert sorted(seen.started) == ["kept ROOT/work", "once ROOT/work"]  # each started once: kept keeps its connection
    assert "once ROOT/work" not in seen.left_running  # stopped before new_session answered


@needs_reference
async def test_dropped_extension_server_matches_reference(tmp_path: Path) -> None:
    moves: list[Any] = [("new", {}), ("switch", "other"), ("switch", "work")]
    ours = await _play("ours", tmp_path, {}, moves=moves, extension=_extension("ours"))
    reference = await _play("reference", tmp_path, {}, moves=moves, extension=_extension("reference"))
    assert ours.steps == reference.steps
    assert [step[1] for step in ours.steps] == [["mcp__kept__echo", "mcp__once__echo"], *[["mcp__kept__echo"]] * 3]


def _changing_extension(kind: str) -> str:
    """``ext`` with a description that changes once the user's mcp.json exists (an empty one, which
    configures nothing and so restarts nothing by itself)."""
    entry = json.dumps(_fake(Path("{log}"), "ext"))
    if kind == "ours":
        return ("import json, os\n\ndef setup(pi):\n    config = json.loads(" + repr(entry) + ")\n"
                "    if os.path.exists(os.path.join(os.environ['PI_CODING_AGENT_DIR'], 'mcp.json')):\n"
                "        config['description'] = 'second'\n    pi.register_mcp_server('ext', config)\n")
    return ("import { existsSync } from 'node:fs';\nimport { join } from 'node:path';\n"
            f"export default function (pi: any) {{\n  const config: any = {entry};\n"
            "  if (existsSync(join(process.env.PI_CODING_AGENT_DIR!, 'mcp.json'))) config.description = 'second';\n"
            "  pi.registerMcpServer('ext', config);\n}\n")


CHANGE: list[Any] = [("new", {}), ("new", {"global": {}})]


@pytest.mark.slow
async def test_a_server_registered_again_with_another_config_restarts(tmp_path: Path) -> None:
    seen = await _play("ours", tmp_path, {}, moves=CHANGE, extension=_changing_extension("ours"))
    assert [step[1:] for step in seen.steps] == [(["mcp__ext__echo"], ["ext ROOT/work"])] * 3
    assert seen.started == ["ext ROOT/work", "ext ROOT/work"]  # the same config kept it, a new one restarted it
    assert seen.left_running == ["ext ROOT/work"]  # only across the first new_session
    assert "overridden" not in seen.stderr


@needs_reference
async def test_changed_registration_matches_reference(tmp_path: Path) -> None:
    ours = await _play("ours", tmp_path, {}, moves=CHANGE, extension=_changing_extension("ours"))
    reference = await _play("reference", tmp_path, {}, moves=CHANGE, extension=_changing_extension("reference"))
    assert ours.steps == reference.steps
    assert reference.started == ["ext ROOT/work"] * 3 and reference.left_running == []


EARLY_AND_LATE = {
    "ours": """
        def setup(pi):
            pi.register_mcp_server('early', {'command': '/nonexistent/early'})
            pi.on('session_start', lambda event, ctx: pi.register_mcp_server('late', {'command': '/nonexistent/late'}))
            pi.register_command('later', handler=lambda args, ctx: pi.register_mcp_server(
                'later', {'command': '/nonexistent/later'}))
    """,
    "reference": """
        export default function (pi: any) {
          pi.registerMcpServer('early', {command: '/nonexistent/early'});
          pi.on('session_start', () => { pi.registerMcpServer('late', {command: '/nonexistent/late'}); });
          pi.registerCommand('later', {handler: async () => {
            pi.registerMcpServer('later', {command: '/nonexistent/later'}); }});
        }
    """,
}


async def _extension_reports(kind: str, root: Path) -> list[list[tuple[str, str]]]:
    """The reports at start, after two new_sessions and after a command, with a failing server in
    mcp.json and three an extension registers: one while it loads, one at each session start, one
    from its command (reported on its own, as pi reports servers registered later)."""
    with FakeLLMServer() as server:
        ws = Workspace.create(root / kind, server.url)
        (ws.agent_dir / "mcp.json").write_text(json.dumps({"mcpServers": {"gone": {"command": "/nonexistent/server"}}}))
        proc = await ws.spawn_with(kind, EARLY_AND_LATE, "--no-session")
        talk = Conversation(proc, server, ws)
        try:
            return [await _notices_after(talk, command) for command in
                    ({"type": "get_state"}, {"type": "new_session"}, {"type": "new_session"},
                     {"type": "prompt", "message": "/later"})]
        finally:
            await proc.kill()


EXTENSION_REPORT = [("warning", "MCP servers need attention:\n  gone: failed: spawn /nonexistent/server ENOENT\n"
                     "  early: failed: spawn /nonexistent/early ENOENT\n  late: failed: spawn /nonexistent/late ENOENT\n"
                     "Run /mcp to fix.")]


@pytest.mark.slow
async def test_extension_servers_are_in_the_one_report_after_the_files(tmp_path: Path) -> None:
    assert await _extension_reports("ours", tmp_path) == [*[EXTENSION_REPORT] * 3, [(
        "warning", "MCP servers need attention:\n  later: failed: spawn /nonexistent/later ENOENT\nRun /mcp to fix.")]]


@needs_reference
async def test_extension_server_reports_match_reference(tmp_path: Path) -> None:
    assert await _extension_reports("ours", tmp_path) == await _extension_reports("reference", tmp_path)
