"""Drive ``pi --mode rpc`` (ours, or the reference pi 1.6.0) through one scripted conversation.

A ``Scenario`` holds the fake server's script, the agent-dir settings and an async ``drive``
function that sends commands through a ``Conversation``; ``play`` runs it against either
implementation with its own fake server and agent dir, so the two runs see identical inputs.
``signature`` reduces the recorded stream to what the protocol promises (record types, order and
the fields clients branch on) for comparing the two.
"""

from __future__ import annotations

import json
import os
import textwrap
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.support.compiled_once import stable_source
from tests.support.fakes.llm_server import FakeLLMServer
from tests.support.reference_pi import REFERENCE_PI, reference_path
from tests.support.rpc_helpers import PYTHON, RpcProcess
from tests.support.run_once import RunOnce

MODEL_ID = "fake-model"

needs_reference = pytest.mark.reference  # skipped, with the reason, without it (tests/conftest.py)

Record = dict[str, Any]


def is_settled(record: Record) -> bool:
    return record["type"] == "agent_settled"


@dataclass
class Workspace:
    """An agent dir routing provider ``fake`` to a fake server, a cwd and the environment for both pis."""

    root: Path
    agent_dir: Path
    cwd: Path
    env: dict[str, str]

    @classmethod
    def create(cls, root: Path, server_url: str, settings: dict[str, Any] | None = None,
               context_window: int = 100000, max_tokens: int = 4096) -> Workspace:
        agent_dir, cwd, home = root / "agent", root / "work", root / "home"
        for directory in (agent_dir, cwd, home):
            directory.mkdir(parents=True)
        (agent_dir / "models.json").write_text(json.dumps({"providers": {"fake": {
            "baseUrl": f"{server_url}/v1", "api": "openai-completions", "apiKey": "dummy",
            "models": [{"id": MODEL_ID, "contextWindow": context_window, "maxTokens": max_tokens}]}}}))
        if settings is not None:
            (agent_dir / "settings.json").write_text(json.dumps(settings))
        env = {**os.environ, "PI_CODING_AGENT_DIR": str(agent_dir), "HOME": str(home)}
        return cls(root, agent_dir, cwd, env)

    def settings(self) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads((self.agent_dir / "settings.json").read_text())
        return loaded

    def set_model(self, api: str, compat: dict[str, Any] | None = None, **fields: Any) -> None:
        """Serve provider ``fake`` in the wire format of ``api``; ``compat`` and ``fields`` go on its model."""
        path = self.agent_dir / "models.json"
        models = json.loads(path.read_text())
        provider = models["providers"]["fake"]
        provider["api"] = api
        provider["models"][0].update(fields, **({} if compat is None else {"compat": compat}))
        path.write_text(json.dumps(models))

    async def spawn_with(self, kind: str, extension: dict[str, str], *args: str) -> RpcProcess:
        """``spawn`` with ``-e`` and the extension written for this side (``extension[kind]``: Python
        source for ours, TypeScript for the reference)."""
        return await self.spawn(kind, *args, "-e", str(self.extension_file(kind, extension)))

    def extension_file(self, kind: str, extension: dict[str, str]) -> Path:
        """Where ``spawn_with`` writes the side's extension: the reference's at a path of its source,
        so that jiti compiles it once across runs."""
        source = textwrap.dedent(extension[kind])
        if kind != "ours":
            return stable_source("reference/extension.ts", source)
        path = self.root / "extension.py"
        path.write_text(source)
        return path

    async def spawn(self, kind: str, *args: str) -> RpcProcess:
        """``kind`` is ``"ours"`` or ``"reference"``; ``args`` follow ``--mode rpc --provider fake --model``."""
        argv = ["--mode", "rpc", "--provider", "fake", "--model", MODEL_ID, *args]
        if kind == "ours":
            return await RpcProcess.spawn([PYTHON, "-m", "pi_coding_agent", *argv], cwd=self.cwd, env=self.env)
        env = {**self.env, "PATH": reference_path(self.env.get("PATH", ""))}
        return await RpcProcess.spawn([str(REFERENCE_PI), *argv], cwd=self.cwd, env=env)


class Conversation:
    """Commands in, every record out (kept in ``records`` in arrival order)."""

    def __init__(self, proc: RpcProcess, server: FakeLLMServer, workspace: Workspace) -> None:
        self.proc = proc
        self.server = server
        self.workspace = workspace
        self.records: list[Record] = []
        self._ids = 0

    async def send(self, command: dict[str, Any]) -> str:
        self._ids += 1
        command_id = f"c{self._ids}"
        await self.proc.send({**command, "id": command_id})
        return command_id

    async def read_until(self, predicate: Callable[[Record], bool]) -> list[Record]:
        records = await self.proc.read_until(predicate)
        self.records.extend(records)
        return records

    async def response(self, command_id: str) -> Record:
        records = await self.read_until(lambda r: r["type"] == "response" and r.get("id") == command_id)
        return records[-1]

    async def request(self, command: dict[str, Any]) -> Record:
        return await self.response(await self.send(command))

    async def prompt(self, text: str) -> list[Record]:
        """A prompt and every record through its ``agent_settled``."""
        await self.send({"type": "prompt", "message": text})
        return await self.read_until(is_settled)


Drive = Callable[[Conversation], Awaitable[None]]


@dataclass
class Scenario:
    script: list[dict[str, Any]]
    drive: Drive
    settings: dict[str, Any] = field(default_factory=dict)
    context_window: int = 100000
    args: tuple[str, ...] = ("--no-session",)
    max_tokens: int = 4096


@dataclass
class Played:
    records: list[Record]
    requests: list[dict[str, Any]]
    workspace: Workspace
    stderr: str = ""  # what the process wrote there: a failed comparison shows its end


async def play(kind: str, scenario: Scenario, root: Path) -> Played:
    """Run ``scenario`` against one implementation with a fresh fake server and agent dir."""
    with FakeLLMServer() as server:
        server.add(*scenario.script)
        workspace = Workspace.create(root / kind, server.url, scenario.settings, scenario.context_window,
                                     scenario.max_tokens)
        proc = await workspace.spawn(kind, *scenario.args)
        conversation = Conversation(proc, server, workspace)
        try:
            await scenario.drive(conversation)
        finally:
            await proc.kill()
        return Played(conversation.records, list(server.requests), workspace, await proc.stderr_text())


_PLAYED: RunOnce[Played] = RunOnce()
_KEPT: list[Scenario] = []  # the scenarios played once stay alive, so that their ids stay theirs


async def play_once(kind: str, scenario: Scenario, root: Path) -> Played:
    """``play``, run the first time only for this (module-level) scenario object in this process; the
    tests that read it share a ``shared_run`` group (tests/support/run_once.py)."""
    _KEPT.append(scenario)
    return await _PLAYED.get((kind, id(scenario)), lambda: play(kind, scenario, root))


# --------------------------------------------------------------------------- reading streams


def flow(records: list[Record]) -> list[str]:
    """Record types in order, message events suffixed with the role (and a final assistant's stopReason)."""
    out = []
    for record in records:
        kind = record["type"]
        if kind == "message_update":
            continue
        if kind in ("message_start", "message_end"):
            message = record["message"]
            kind += f":{message['role']}"
            if message["role"] == "assistant" and message.get("stopReason") != "pending":
                kind += f":{message['stopReason']}"
        elif kind == "response":
            kind += f":{record['command']}"
        out.append(kind)
    return out


def only(records: list[Record], kind: str) -> list[Record]:
    return [r for r in records if r["type"] == kind]


# --------------------------------------------------------------------------- comparing streams

_MESSAGE_EVENTS = ("message_start", "message_end")


def _brief(record: Record) -> tuple[Any, ...] | None:
    kind = record["type"]
    if kind == "message_update":
        return None
    if kind in _MESSAGE_EVENTS:
        message = record["message"]
        return kind, message["role"], message.get("stopReason"), message.get("errorMessage")
    if kind == "response":
        detail = record.get("error") if not record["success"] else sorted(record.get("data") or {})
        return kind, record["command"], record["success"], json.dumps(detail)
    if kind == "turn_end":
        return kind, record["message"].get("stopReason"), len(record["toolResults"])
    if kind == "agent_end":
        return kind, record["willRetry"]
    if kind.startswith("tool_execution_"):  # tool results and timings are the tools' business, not the loop's
        return kind, record["toolCallId"], record.get("isError")
    if kind == "entry_appended":
        entry = record["entry"]
        return kind, entry["type"], "targetId" in entry, json.dumps(entry.get("replacement"))
    if kind == "compaction_end":
        result = record.get("result")
        return (kind, record["reason"], record["aborted"], record["willRetry"], record.get("errorMessage"),
                None if result is None else json.dumps(sorted(result)),
                None if result is None else json.dumps(result.get("usage"), sort_keys=True))
    return kind, json.dumps(record, sort_keys=True)


def signature(records: list[Record]) -> list[tuple[Any, ...]]:
    """Types, order and the decisive fields; drops what legitimately differs (ids, times, prompt texts)."""
    return [brief for brief in map(_brief, records) if brief is not None]


def conversation_requests(requests: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The messages of each agent request (summary requests carry no tools), minus the system prompt.

    System prompt and summariser instructions are worded by each implementation; the conversation
    the model sees must be the same.
    """
    return [[m for m in r["body"]["messages"] if m["role"] not in ("system", "developer")]
            for r in requests if r["body"].get("tools")]


async def compare(scenario: Scenario, root: Path, once: bool = False) -> tuple[Played, Played]:
    """Play ``scenario`` on both sides and assert the same record signature and provider requests;
    ``once``: our side through ``play_once``."""
    reference = await play("reference", scenario, root)
    ours = await (play_once if once else play)("ours", scenario, root)
    assert signature(ours.records) == signature(reference.records)
    assert len(ours.requests) == len(reference.requests)
    assert conversation_requests(ours.requests) == conversation_requests(reference.requests)
    return ours, reference
