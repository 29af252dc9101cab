"""Every RPC command and session flow, run side by side against our ``pi --mode rpc`` and the reference pi 1.6.0.

The harness gives each side a fresh temp root (HOME, PI_CODING_AGENT_DIR, cwd), the same models.json and
settings, and its own fake LLM server fed the same script. A *script* is a list of steps; each step sends
one command (built from the results so far) and reads until its response, optionally further until an
event. Records are then normalised (entry and session ids numbered by first appearance, timestamps,
durations, temp paths, package paths) and compared: responses per command id, events in order
(``message_update`` reduced to its event kinds), session files line by line, LLM request bodies.

Comparison tests skip when the reference is not installed; each flow also has an assertion test against
our process alone, so CI without the reference still checks the behaviour.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.support.fakes.llm_server import FakeLLMServer
from tests.support.reference_pi import REFERENCE_NODE_BIN, REFERENCE_PI, REFERENCE_ROOT
from tests.support.rpc_helpers import PYTHON, RpcProcess
from tests.support.run_once import RunOnce, shared_run

needs_reference = pytest.mark.reference  # skipped, with the reason, without it (tests/conftest.py)

PROVIDER = "fake"
COST = {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75}
MODELS = [
    {"id": "fake-model", "name": "Fake Model", "input": ["text", "image"], "contextWindow": 100000,
     "maxTokens": 4096, "cost": COST},
    {"id": "fake-reasoner", "name": "Fake Reasoner", "reasoning": True, "contextWindow": 200000,
     "maxTokens": 8192, "cost": COST},
    {"id": "fake-mapped", "name": "Fake Mapped", "reasoning": True, "contextWindow": 200000, "maxTokens": 8192,
     "thinkingLevelMap": {"minimal": None, "xhigh": "xhigh"}, "cost": COST},
]
USAGE = {"input": 1200, "output": 80, "cacheRead": 0, "cacheWrite": 0}

# --------------------------------------------------------------------------- one side


@dataclass
class Side:
    """One pi process (ours or the reference) in its own temp root with its own fake LLM server."""

    name: str
    root: Path
    server: FakeLLMServer
    proc: RpcProcess | None = None
    cwd: Path = field(init=False)
    agent_dir: Path = field(init=False)
    session_dir: Path = field(init=False)

    def __post_init__(self) -> None:
        self.cwd = self.root / "work"
        self.agent_dir = self.root / "agent"
        self.session_dir = self.root / "sessions"
        for directory in (self.cwd, self.agent_dir, self.root / "home"):
            directory.mkdir(parents=True, exist_ok=True)
        providers = {PROVIDER: {"baseUrl": f"{self.server.url}/v1", "api": "openai-completions",
                                "apiKey": "dummy", "models": MODELS}}
        (self.agent_dir / "models.json").write_text(json.dumps({"providers": providers}))
        (self.agent_dir / "settings.json").write_text(json.dumps({"retry": {"enabled": False}}))
        prompts = self.agent_dir / "prompts"
        prompts.mkdir()
        (prompts / "review.md").write_text("---\ndescription: Review a file\n---\nPlease review $1 carefully.\n")
        skill = self.agent_dir / "skills" / "greeter"
        skill.mkdir(parents=True)
        (skill / "SKILL.md").write_text("---\nname: greeter\ndescription: Greets people politely\n---\n"
                                        "Say hello to the person named in the arguments.\n")

    def argv(self, *extra: str) -> list[str]:
        base = [str(REFERENCE_PI)] if self.name == "reference" else [PYTHON, "-m", "pi_coding_agent"]
        return [*base, "--mode", "rpc", "--session-dir", str(self.session_dir), *extra]

    def env(self) -> dict[str, str]:
        env = {**os.environ, "HOME": str(self.root / "home"), "PI_CODING_AGENT_DIR": str(self.agent_dir),
               "TMPDIR": str(self.root)}
        env.pop("PI_CODING_AGENT_SESSION_DIR", None)
        if self.name == "reference":
            env["PATH"] = f"{REFERENCE_NODE_BIN}:{env['PATH']}"
        return env

    async def start(self, *extra: str) -> RpcProcess:
        self.proc = await RpcProcess.spawn(self.argv(*extra), cwd=self.cwd, env=self.env())
        return self.proc

    def session_files(self) -> list[Path]:
        """Every session file the run left, oldest header first."""
        files = [p for p in self.root.rglob("*.jsonl")]
        return sorted(files, key=lambda p: (json.loads(p.read_text().split("\n", 1)[0])["timestamp"], str(p)))


# --------------------------------------------------------------------------- scripts


Build = Callable[["Transcript"], dict[str, Any]]


@dataclass
class Step:
    """One command (or a function building it from earlier results) and what to read after it."""

    command: dict[str, Any] | Build | None
    until: str | None = None  # read further until this event type (e.g. "agent_settled")
    llm: list[dict[str, Any]] = field(default_factory=list)  # responses to script before sending


@dataclass
class Transcript:
    """Everything one side produced for a script."""

    side: Side
    records: list[dict[str, Any]] = field(default_factory=list)
    responses: dict[str, dict[str, Any]] = field(default_factory=dict)

    def data(self, command_id: str) -> Any:
        return self.responses[command_id].get("data")

    def last(self, command_type: str) -> Any:
        """The data of the latest response to ``command_type``."""
        for response in reversed(list(self.responses.values())):
            if response.get("command") == command_type:
                return response.get("data")
        raise KeyError(command_type)

    def all(self, command_type: str) -> list[Any]:
        return [r.get("data") for r in self.responses.values() if r.get("command") == command_type]

    def events(self) -> list[dict[str, Any]]:
        return [r for r in self.records if r.get("type") != "response"]


async def run_script(side: Side, steps: list[Step], *extra: str) -> Transcript:
    """Run ``steps`` on a fresh process of ``side``; stdin is closed and the process reaped at the end."""
    proc = await side.start(*extra)
    transcript = Transcript(side)
    try:
        for number, step in enumerate(steps, 1):
            side.server.add(*step.llm)
            reached = step.until is None
            if step.command is not None:
                command = step.command(transcript) if callable(step.command) else dict(step.command)
                command_id = f"c{number}"
                await proc.send({"id": command_id, **command})
                got_response = False
                while not (got_response and reached):
                    record = await proc.read_record()
                    transcript.records.append(record)
                    if record.get("type") == "response" and record.get("id") == command_id:
                        transcript.responses[command_id] = record
                        got_response = True
                    elif record.get("type") == step.until:
                        reached = True
            while not reached:
                record = await proc.read_record()
                transcript.records.append(record)
                reached = record.get("type") == step.until
        await proc.close_stdin()
        transcript.records.extend(await proc.read_rest())
        await proc.wait()
    finally:
        await proc.kill()
    return transcript


# --------------------------------------------------------------------------- normalisation

_HEX8 = re.compile(r"^[0-9a-f]{8}$")
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")
_FILE_STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z")
_VOLATILE_NUMBERS = {"timestamp", "durationMs", "labelTimestamp", "wall_time_seconds"}  # timing, not behaviour
_ID_KEYS = {"id", "parentId", "targetId", "firstKeptEntryId", "leafId", "entryId", "fromId"}
_PACKAGE_DIRS = (
    str(REFERENCE_ROOT / "pi-1.6.0" / "node_modules" / "@earendil-works" / "pi-coding-agent"),
)


# Wording we deliberately do not share with pi (prompt prose, tool descriptions) is compared by shape only.
_PROSE_SECTIONS = {"preamble", "tools", "rules", "docs"}


def _tool_shape(tool: dict[str, Any]) -> dict[str, Any]:
    """A tool declaration without its prose: name, parameter names and required list."""
    parameters = tool.get("parameters") or {}
    return {"name": tool.get("name"), "parameters": sorted(parameters.get("properties") or {}),
            "required": parameters.get("required")}


def _without_prose(message: dict[str, Any]) -> dict[str, Any]:
    sections = message.get("sections")
    out = dict(message)
    if isinstance(sections, dict):
        out["sections"] = {k: "<prose>" if k in _PROSE_SECTIONS and v is not None else v for k, v in sections.items()}
    if "toolsAdded" in out:
        out["toolsAdded"] = [_tool_shape(tool) for tool in out["toolsAdded"]]
    return out


class Normaliser:
    """Replaces volatile values by stable placeholders; ids are numbered by first appearance."""

    def __init__(self, side: Side) -> None:
        self.root = str(side.root)
        self.llm_url = side.server.url
        self.ids: dict[str, str] = {}

    def _id(self, value: str) -> str:
        return self.ids.setdefault(value, f"<id{len(self.ids) + 1}>")

    def text(self, value: str) -> str:
        value = value.replace(self.root, "<ROOT>").replace(self.llm_url, "<LLM>")
        for package in _PACKAGE_DIRS:
            value = value.replace(package, "<PKG>")
        value = _UUID.sub(lambda m: self._id(m.group(0)), value)
        return _FILE_STAMP.sub("<STAMP>", value)

    def value(self, value: Any, key: str | None = None) -> Any:
        if isinstance(value, dict):
            if value.get("role") == "system":
                value = _without_prose(value)
            elif value.get("stopReason") == "aborted" and value.get("content"):
                value = {**value, "content": "<partial>"}  # how far an aborted stream got is timing
            return {k: self.value(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [self.value(v, key) for v in value]
        if isinstance(value, str):
            if key in _ID_KEYS and _HEX8.match(value):
                return self._id(value)
            if _ISO.match(value):
                return "<ISO>"
            return self.text(value)
        if key in _VOLATILE_NUMBERS and isinstance(value, int | float) and not isinstance(value, bool):
            return f"<{key}>"
        return value


def _update_kinds(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``message_update`` reduced to the first of each event kind per message: chunking, live usage
    and where a command's own event (``queue_update``) falls between two deltas are timing."""
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for record in records:
        if record.get("type") == "message_start":
            seen = set()
        if record.get("type") == "message_update":
            kind = record["assistantMessageEvent"]["type"]
            if kind in seen:
                continue
            seen.add(kind)
            record = {"type": "message_update", "kind": kind}
        out.append(record)
    return out


def _without_builtin_commands(response: dict[str, Any]) -> dict[str, Any]:
    """pi 1.6.0 lists its built-in ``llama`` and ``mcp`` extension commands; ``get_commands`` is
    compared without built-ins (tests/ai/providers/test_llama.py compares ``llama`` itself)."""
    if response.get("command") != "get_commands" or not response.get("success"):
        return response
    commands = [c for c in response["data"]["commands"] if c.get("sourceInfo", {}).get("source") != "builtin"]
    return {**response, "data": {"commands": commands}}


@dataclass
class Comparable:
    responses: dict[str, Any]
    events: list[Any]
    files: list[list[Any]]
    requests: list[Any]
    settings: Any


def comparable(transcript: Transcript) -> Comparable:
    """The normalised view of a transcript, its session files and the LLM requests it made."""
    side = transcript.side
    norm = Normaliser(side)
    events = norm.value(_update_kinds(transcript.events()))
    responses = {key: norm.value(_without_builtin_commands(value)) for key, value in transcript.responses.items()}
    files = [[norm.value(json.loads(line)) for line in path.read_text().splitlines()]
             for path in side.session_files()]
    requests = [norm.value([m for m in request["body"].get("messages") or [] if m.get("role") not in
                            ("system", "developer")]) for request in side.server.requests]
    settings = norm.value(json.loads((side.agent_dir / "settings.json").read_text()))
    return Comparable(responses, events, files, requests, settings)


def assert_same(ours: Comparable, reference: Comparable) -> None:
    """Responses per id, events in order, session files line by line, LLM requests, settings."""
    assert [e["type"] for e in ours.events] == [e["type"] for e in reference.events]
    assert [[line.get("type") for line in f] for f in ours.files] == \
        [[line.get("type") for line in f] for f in reference.files]
    assert len(ours.requests) == len(reference.requests)
    found = [difference for key in ("responses", "events", "files", "requests", "settings")
             for difference in differences(getattr(ours, key), getattr(reference, key), key)]
    assert not found, "\n".join(found)


def differences(mine: Any, theirs: Any, path: str = "") -> list[str]:
    """Every path at which two normalised values differ (for readable failures)."""
    if isinstance(mine, dict) and isinstance(theirs, dict):
        out = []
        for key in sorted(set(mine) | set(theirs), key=str):
            if key not in mine:
                out.append(f"{path}.{key}: missing in ours (reference {theirs[key]!r:.120})")
            elif key not in theirs:
                out.append(f"{path}.{key}: only in ours ({mine[key]!r:.120})")
            else:
                out += differences(mine[key], theirs[key], f"{path}.{key}")
        return out
    if isinstance(mine, list) and isinstance(theirs, list) and len(mine) == len(theirs):
        return [d for i, (a, b) in enumerate(zip(mine, theirs, strict=True)) for d in differences(a, b, f"{path}[{i}]")]
    return [] if mine == theirs else [f"{path}: ours {mine!r:.200} != reference {theirs!r:.200}"]


# --------------------------------------------------------------------------- flows

TEXT = {"content": [{"type": "text", "text": "Hello there"}], "usage": USAGE}


def reply(text: str, **extra: Any) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "usage": USAGE, **extra}


def _entry_id(transcript: Transcript, index: int) -> str:
    return str(transcript.last("get_entries")["entries"][index]["id"])


def _fork_entry(transcript: Transcript, index: int) -> str:
    return str(transcript.last("get_fork_messages")["messages"][index]["entryId"])


def conversation_flow() -> list[Step]:
    """A real conversation, then every read command, naming, export, clone and fork."""
    tool_call = {"content": [{"type": "toolCall", "id": "call_1", "name": "bash",
                              "arguments": {"command": "echo from-tool"}}], "usage": USAGE}
    return [
        Step({"type": "get_state"}),
        Step({"type": "get_last_assistant_text"}),
        Step({"type": "prompt", "message": "first question"}, "agent_settled", [reply("First answer")]),
        Step({"type": "prompt", "message": "second question"}, "agent_settled", [tool_call, reply("Tool said hi")]),
        Step({"type": "get_messages"}),
        Step({"type": "get_entries"}),
        Step(lambda t: {"type": "get_entries", "since": _entry_id(t, 4)}),
        Step({"type": "get_entries", "since": "nope"}),
        Step({"type": "get_fork_messages"}),
        Step({"type": "get_last_assistant_text"}),
        Step({"type": "get_session_stats"}),
        Step({"type": "set_session_name", "name": "  my\nsession  "}),
        Step({"type": "set_session_name", "name": "   "}),
        Step({"type": "export_html"}),
        Step({"type": "export_html", "outputPath": "out/page.html"}),
        Step({"type": "get_tree"}),
        Step({"type": "clone"}),
        Step({"type": "get_state"}),
        Step({"type": "get_tree"}),
        Step({"type": "get_fork_messages"}),
        Step(lambda t: {"type": "fork", "entryId": _fork_entry(t, 1)}),
        Step({"type": "fork", "entryId": "nope"}),
        Step({"type": "get_tree"}),
        Step({"type": "get_messages"}),
        Step({"type": "prompt", "message": "edited second"}, "agent_settled", [reply("Branch answer")]),
        Step({"type": "get_tree"}),
        Step({"type": "get_session_stats"}),
        Step(lambda t: {"type": "fork", "entryId": _fork_entry(t, 0)}),
        Step({"type": "get_state"}),
        Step({"type": "get_entries"}),
        Step({"type": "clone"}),
    ]


def models_flow() -> list[Step]:
    """Model and thinking commands over two reasoning models, one with a thinkingLevelMap."""
    return [
        Step({"type": "get_available_models"}),
        Step({"type": "get_available_thinking_levels"}),
        Step({"type": "cycle_thinking_level"}),
        Step({"type": "set_thinking_level", "level": "high"}),
        Step({"type": "set_model", "provider": PROVIDER, "modelId": "fake-reasoner"}),
        Step({"type": "get_available_thinking_levels"}),
        Step({"type": "set_thinking_level", "level": "xhigh"}),
        Step({"type": "set_thinking_level", "level": "bogus"}),
        Step({"type": "cycle_thinking_level"}),
        Step({"type": "cycle_thinking_level"}),
        Step({"type": "set_model", "provider": PROVIDER, "modelId": "fake-mapped"}),
        Step({"type": "get_available_thinking_levels"}),
        Step({"type": "set_thinking_level", "level": "minimal"}),
        Step({"type": "set_thinking_level", "level": "max"}),
        Step({"type": "cycle_thinking_level"}),
        Step({"type": "cycle_model"}),
        Step({"type": "cycle_model"}),
        Step({"type": "get_state"}),
        Step({"type": "set_model", "provider": PROVIDER, "modelId": "missing"}),
        Step({"type": "set_model", "provider": "nobody", "modelId": "fake-model"}),
        Step({"type": "set_model", "provider": "anthropic", "modelId": "claude-sonnet-4-5"}),  # known, no key
        Step({"type": "prompt", "message": "think"}, "agent_settled", [reply("Thought")]),
        Step({"type": "get_session_stats"}),
        Step({"type": "get_entries"}),
        *_replacement_steps(),
    ]


def _replacement_steps() -> list[Step]:
    """After a model and level change: which model and level do new and resumed sessions get?"""

    def current_file(t: Transcript) -> str:
        return str(t.all("get_state")[-2]["sessionFile"])  # the state read before new_session

    return [
        Step({"type": "set_model", "provider": PROVIDER, "modelId": "fake-reasoner"}),
        Step({"type": "set_thinking_level", "level": "high"}),
        Step({"type": "prompt", "message": "reason"}, "agent_settled", [reply("Reasoned")]),
        Step({"type": "get_state"}),
        Step({"type": "new_session"}),
        Step({"type": "get_state"}),
        Step(lambda t: {"type": "switch_session", "sessionPath": current_file(t)}),
        Step({"type": "get_state"}),
        Step({"type": "prompt", "message": "after switch"}, "agent_settled", [reply("Switched")]),
        Step({"type": "get_entries"}),
    ]


def default_model_flow() -> list[Step]:
    """Started without --model: the model comes from the available models, then sessions are replaced."""
    return [Step({"type": "get_state"}), *_replacement_steps()]


def settings_flow() -> list[Step]:
    """Queue modes and toggles (persisted to settings.json), idle aborts, compaction refused."""
    return [
        Step({"type": "set_steering_mode", "mode": "all"}),
        Step({"type": "set_follow_up_mode", "mode": "all"}),
        Step({"type": "set_auto_compaction", "enabled": False}),
        Step({"type": "set_auto_retry", "enabled": True}),
        Step({"type": "get_state"}),
        Step({"type": "abort"}),
        Step({"type": "abort_retry"}),
        Step({"type": "abort_bash"}),
        Step({"type": "compact"}),
        Step({"type": "clear_queue"}),
        Step({"type": "export_html"}),
        Step({"type": "get_commands"}),
    ]


def sessions_flow() -> list[Step]:
    """new_session (with and without parentSession) and switch_session to existing and new paths."""

    def first_file(t: Transcript) -> str:
        return str(t.data("c2")["sessionFile"])

    return [
        Step({"type": "prompt", "message": "in the first session"}, "agent_settled", [reply("One")]),
        Step({"type": "get_state"}),
        Step({"type": "new_session"}),
        Step({"type": "get_state"}),
        Step({"type": "get_messages"}),
        Step({"type": "export_html"}),
        Step({"type": "clone"}),
        Step(lambda t: {"type": "new_session", "parentSession": first_file(t)}),
        Step({"type": "prompt", "message": "in the child session"}, "agent_settled", [reply("Two")]),
        Step({"type": "get_state"}),
        Step(lambda t: {"type": "switch_session", "sessionPath": first_file(t)}),
        Step({"type": "get_state"}),
        Step({"type": "get_messages"}),
        Step({"type": "get_entries"}),
        Step(lambda t: {"type": "switch_session",
                        "sessionPath": str(Path(first_file(t)).parent / "later" / "fresh.jsonl")}),
        Step({"type": "get_state"}),
        Step({"type": "get_messages"}),
        Step({"type": "prompt", "message": "in the fresh session"}, "agent_settled", [reply("Three")]),
        Step({"type": "get_state"}),
    ]


def bash_flow() -> list[Step]:
    """User bash with and without excludeFromContext, and what the next prompt sends."""
    return [
        Step({"type": "bash", "command": "echo visible"}),
        Step({"type": "bash", "command": "echo hidden; exit 3", "excludeFromContext": True}),
        Step({"type": "get_messages"}),
        Step({"type": "prompt", "message": "what ran?"}, "agent_settled", [reply("Two commands")]),
        Step({"type": "get_state"}),
        Step({"type": "get_session_stats"}),
    ]


def idle_queue_flow() -> list[Step]:
    """steer and follow_up while idle ride on the next prompt's run."""
    return [
        Step({"type": "steer", "message": "steered early"}),
        Step({"type": "follow_up", "message": "followed early"}),
        Step({"type": "get_state"}),
        Step({"type": "prompt", "message": "go"}, "agent_settled", [reply("A"), reply("B"), reply("C")]),
        Step({"type": "get_messages"}),
        Step({"type": "steer", "message": "to be cleared"}),
        Step({"type": "clear_queue"}),
        Step({"type": "get_state"}),
    ]


SLOW = {"chunkSize": 2, "chunkDelayMs": 30}


def streaming_queue_flow() -> list[Step]:
    """steer, follow_up, prompt-with-streamingBehavior and clear_queue while a reply streams."""
    long_text = "streaming " * 20
    return [
        Step({"type": "prompt", "message": "stream please"}, "message_update",
             [reply(long_text, **SLOW), reply("After steer"), reply("After follow-up")]),
        Step({"type": "steer", "message": "steer now"}),
        Step({"type": "follow_up", "message": "follow later"}),
        Step({"type": "prompt", "message": "refused"}),
        Step({"type": "get_state"}, "agent_settled"),
        Step({"type": "prompt", "message": "stream again"}, "message_update", [reply(long_text, **SLOW)]),
        Step({"type": "prompt", "message": "queued via prompt", "streamingBehavior": "followUp"}),
        Step({"type": "clear_queue"}),
        Step({"type": "abort"}),
        Step({"type": "get_messages"}),
    ]


PIXEL_PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==")


def resources_flow() -> list[Step]:
    """get_commands with a prompt template and a skill; both expand; a prompt with an image."""
    image = {"type": "image", "data": PIXEL_PNG, "mimeType": "image/png"}
    return [
        Step({"type": "get_commands"}),
        Step({"type": "prompt", "message": "/review main.py"}, "agent_settled", [reply("Reviewed")]),
        Step({"type": "prompt", "message": "/skill:greeter Ana"}, "agent_settled", [reply("Hello Ana")]),
        Step({"type": "prompt", "message": "look", "images": [image]}, "agent_settled", [reply("A pixel")]),
        Step({"type": "get_messages"}),
    ]


def in_memory_flow() -> list[Step]:
    """With --no-session: export refused, clone and fork replace the in-memory session."""
    return [
        Step({"type": "export_html"}),
        Step({"type": "prompt", "message": "remember this"}, "agent_settled", [reply("Remembered")]),
        Step({"type": "prompt", "message": "and this"}, "agent_settled", [reply("Also")]),
        Step({"type": "clone"}),
        Step({"type": "get_state"}),
        Step({"type": "get_fork_messages"}),
        Step(lambda t: {"type": "fork", "entryId": _fork_entry(t, 1)}),
        Step({"type": "get_messages"}),
        Step({"type": "get_tree"}),
        Step({"type": "new_session"}),
        Step({"type": "get_entries"}),
        Step({"type": "export_html"}),
    ]


MODEL_ARGS = ("--provider", PROVIDER, "--model", "fake-model")

# flow name -> (steps, command-line arguments)
FLOWS: dict[str, tuple[Callable[[], list[Step]], tuple[str, ...]]] = {
    "conversation": (conversation_flow, MODEL_ARGS),
    "models": (models_flow, MODEL_ARGS),
    "default_model": (default_model_flow, ()),
    "settings": (settings_flow, MODEL_ARGS),
    "sessions": (sessions_flow, MODEL_ARGS),
    "bash": (bash_flow, MODEL_ARGS),
    "idle_queue": (idle_queue_flow, MODEL_ARGS),
    "streaming_queue": (streaming_queue_flow, MODEL_ARGS),
    "resources": (resources_flow, MODEL_ARGS),
    "in_memory": (in_memory_flow, (*MODEL_ARGS, "--no-session")),
}


# --------------------------------------------------------------------------- side by side


def in_flow_group(flow: str) -> pytest.MarkDecorator:
    """The group of a flow's tests, which read one run of our side (``run_ours``)."""
    return shared_run(f"rpc-flow-{flow}")


@needs_reference
@pytest.mark.parametrize("flow", [pytest.param(flow, marks=in_flow_group(flow)) for flow in sorted(FLOWS)])
async def test_flow_matches_reference(flow: str, tmp_path: Path) -> None:
    steps, args = FLOWS[flow]
    with FakeLLMServer() as server:
        reference = await run_script(Side("reference", tmp_path / "reference", server), steps(), *args)
    assert_same(comparable(await run_ours(flow, tmp_path / "ours")), comparable(reference))


# --------------------------------------------------------------------------- ours alone (expected shapes)


_OURS: RunOnce[Transcript] = RunOnce()
"""Our side of each flow, run once per process: the comparison and the flow's own test read the same
transcript, its files and its LLM requests (none of them writes to it)."""


async def run_ours(flow: str, root: Path) -> Transcript:
    """Our side of ``flow`` (in ``root`` the first time it runs in this process)."""
    async def run() -> Transcript:
        steps, args = FLOWS[flow]
        with FakeLLMServer() as server:
            return await run_script(Side("ours", root, server), steps(), *args)

    return await _OURS.get(flow, run, copied=False)  # a transcript holds its (stopped) server


def _events_of(transcript: Transcript, kind: str) -> list[dict[str, Any]]:
    return [r for r in transcript.events() if r["type"] == kind]


def _roles(messages: list[dict[str, Any]]) -> list[str]:
    return [m["role"] for m in messages]


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.slow
@in_flow_group("conversation")
async def test_conversation_reads_names_exports_clones_and_forks(tmp_path: Path) -> None:
    t = await run_ours("conversation", tmp_path)
    cwd = t.side.cwd
    first_state = t.data("c1")
    assert "sessionName" not in first_state and first_state["messageCount"] == 0
    assert t.data("c2") == {}
    assert _roles(t.data("c5")["messages"]) == [
        "system", "user", "assistant", "user", "assistant", "toolResult", "assistant"]
    entries = t.data("c6")["entries"]
    assert [e["type"] for e in entries] == ["model_change", "thinking_level_change", *["message"] * 7]
    assert t.data("c6")["leafId"] == entries[-1]["id"]
    assert t.data("c7") == {"entries": entries[5:], "leafId": entries[-1]["id"]}
    assert t.responses["c8"]["error"] == "Entry not found: nope"
    assert [m["text"] for m in t.data("c9")["messages"]] == ["first question", "second question"]
    assert t.data("c10") == {"text": "Tool said hi"}
    stats = t.data("c11")
    assert {k: stats[k] for k in ("userMessages", "assistantMessages", "toolCalls", "toolResults", "totalMessages")} \
        == {"userMessages": 2, "assistantMessages": 3, "toolCalls": 1, "toolResults": 1, "totalMessages": 7}
    assert stats["tokens"] == {"input": 3600, "output": 240, "cacheRead": 0, "cacheWrite": 0, "total": 3840}
    assert stats["cost"] == pytest.approx(3 * (1200 * 3 + 80 * 15) / 1e6)
    assert stats["contextUsage"]["contextWindow"] == 100000
    assert {"type": "session_info_changed", "name": "my session"} in t.events()
    assert "data" not in t.responses["c12"] and t.responses["c13"]["error"] == "Session name cannot be empty"
    source = Path(first_state["sessionFile"])
    assert t.data("c14") == {"path": f"pi-session-{source.stem}.html"} and (cwd / t.data("c14")["path"]).exists()
    assert t.responses["c15"]["error"] == "ENOENT: no such file or directory, open 'out/page.html'"
    assert t.data("c17") == {"cancelled": False}
    clone_file = Path(t.data("c18")["sessionFile"])
    assert clone_file != source and t.data("c18")["sessionName"] == "my session"
    assert t.data("c21") == {"text": "second question", "cancelled": False}
    assert t.responses["c22"]["error"] == "Invalid entry ID for forking"
    assert _roles(t.data("c24")["messages"]) == ["system", "user", "assistant"]
    assert t.responses["c31"]["error"] == \
        "This session has not been saved yet. Send a message before cloning or forking it."
    files = t.side.session_files()
    assert [f for f in files if f.parent == t.side.session_dir] == files and len(files) == 3
    assert files[0] == source and files[1] == clone_file
    assert _lines(files[1])[0]["parentSession"] == str(source)
    assert _lines(files[2])[0]["parentSession"] == str(clone_file)
    assert [e["id"] for e in _lines(files[1])[1:]] == [e["id"] for e in _lines(source)[1:]]  # ids kept


@in_flow_group("models")
@pytest.mark.slow
async def test_model_and_thinking_commands(tmp_path: Path) -> None:
    t = await run_ours("models", tmp_path)
    assert [m["id"] for m in t.data("c1")["models"]] == ["fake-model", "fake-reasoner", "fake-mapped"]
    assert t.data("c2") == {"levels": ["off"]} and t.data("c3") is None
    assert t.data("c5")["id"] == "fake-reasoner"
    assert t.data("c6") == {"levels": ["off", "minimal", "low", "medium", "high"]}
    assert t.data("c9") == {"level": "minimal"} and t.data("c10") == {"level": "low"}  # "bogus" clamped to off
    assert t.data("c12") == {"levels": ["off", "low", "medium", "high", "xhigh"]}  # minimal mapped to null
    assert t.data("c15") == {"level": "off"}  # wrapped after xhigh ("max" clamped down to it)
    assert t.data("c16")["model"]["id"] == "fake-model" and t.data("c16")["isScoped"] is False
    assert t.data("c17")["model"]["id"] == "fake-reasoner"
    for command_id, wanted in (("c19", "fake/missing"), ("c20", "nobody/fake-model"),
                               ("c21", "anthropic/claude-sonnet-4-5")):
        assert t.responses[command_id]["error"] == f"Model not found: {wanted}"
    # only effective changes are announced ("high" on a non-reasoning model, "minimal" where unmapped: none)
    levels = [e["level"] for e in _events_of(t, "thinking_level_changed")]
    assert levels == ["high", "off", "minimal", "low", "xhigh", "off", "high"]
    # new and resumed sessions take the --model model, whatever the previous session used
    assert t.data("c28")["model"]["id"] == "fake-reasoner" and t.data("c28")["thinkingLevel"] == "high"
    for command_id in ("c30", "c32"):
        assert (t.data(command_id)["model"]["id"], t.data(command_id)["thinkingLevel"]) == ("fake-model", "off")


@pytest.mark.slow
@in_flow_group("default_model")
async def test_started_without_model_flag_new_session_takes_the_initial_model(tmp_path: Path) -> None:
    t = await run_ours("default_model", tmp_path)
    assert t.data("c1")["model"]["id"] == "fake-model"  # first available (our faux provider is not listed)
    assert (t.data("c5")["model"]["id"], t.data("c5")["thinkingLevel"]) == ("fake-reasoner", "high")
    assert (t.data("c7")["model"]["id"], t.data("c7")["thinkingLevel"]) == ("fake-model", "off")
    # resuming restores the session's own model and level
    assert (t.data("c9")["model"]["id"], t.data("c9")["thinkingLevel"]) == ("fake-reasoner", "high")


@in_flow_group("settings")
async def test_settings_commands_persist_and_idle_commands_answer(tmp_path: Path) -> None:
    t = await run_ours("settings", tmp_path)
    assert all("data" not in t.responses[f"c{n}"] and t.responses[f"c{n}"]["success"] for n in (1, 2, 3, 4, 6, 7, 8))
    state = t.data("c5")
    assert (state["steeringMode"], state["followUpMode"], state["autoCompactionEnabled"]) == ("all", "all", False)
    assert json.loads((t.side.agent_dir / "settings.json").read_text()) == {
        "retry": {"enabled": True}, "steeringMode": "all", "followUpMode": "all", "compaction": {"enabled": False}}
    assert t.responses["c9"]["error"] == "Nothing to compact (session too small)"
    assert t.data("c10") == {"steering": [], "followUp": []}
    assert t.responses["c11"]["error"] == "Nothing to export yet - start a conversation first"
    assert [c["name"] for c in t.data("c12")["commands"]
            if c["sourceInfo"].get("source") != "builtin"] == ["review", "skill:greeter"]


@pytest.mark.slow
@in_flow_group("sessions")
async def test_new_and_switched_sessions_write_their_files(tmp_path: Path) -> None:
    t = await run_ours("sessions", tmp_path)
    first = Path(t.data("c2")["sessionFile"])
    assert t.data("c3") == {"cancelled": False} and t.data("c5") == {"messages": []}
    assert t.responses["c6"]["error"] == "Nothing to export yet - start a conversation first"
    assert t.responses["c7"]["error"] == \
        "This session has not been saved yet. Send a message before cloning or forking it."
    child = Path(t.data("c10")["sessionFile"])
    assert _lines(child)[0]["parentSession"] == str(first)
    assert t.data("c12")["sessionFile"] == str(first)
    assert [m["role"] for m in t.data("c13")["messages"]] == ["system", "user", "assistant"]
    fresh = first.parent / "later" / "fresh.jsonl"
    assert t.data("c16")["sessionFile"] == str(fresh) and t.data("c17") == {"messages": []}
    assert [e["type"] for e in _lines(fresh)] == [
        "session", "model_change", "thinking_level_change", "message", "message", "message"]
    assert len(t.side.session_files()) == 3  # the empty new session never reached the disk


@pytest.mark.slow
@in_flow_group("bash")
async def test_bash_excluded_from_context_stays_out_of_the_next_request(tmp_path: Path) -> None:
    t = await run_ours("bash", tmp_path)
    assert t.data("c1") == {"output": "visible\n", "exitCode": 0, "cancelled": False, "truncated": False}
    assert t.data("c2") == {"output": "hidden\n", "exitCode": 3, "cancelled": False, "truncated": False}
    assert [e for e in t.events() if e["type"] == "bash_execution_update"] == [
        {"type": "bash_execution_update", "id": "c1", "delta": "visible\n"},
        {"type": "bash_execution_update", "id": "c2", "delta": "hidden\n"}]
    recorded = t.data("c3")["messages"]
    assert [m["role"] for m in recorded] == ["bashExecution", "bashExecution"]
    assert "excludeFromContext" not in recorded[0] and recorded[1]["excludeFromContext"] is True
    sent = json.dumps(t.side.server.requests[0]["body"]["messages"])
    assert "Ran `echo visible`" in sent and "hidden" not in sent


@pytest.mark.slow
@in_flow_group("idle_queue")
async def test_idle_steer_and_follow_up_ride_on_the_next_run(tmp_path: Path) -> None:
    t = await run_ours("idle_queue", tmp_path)
    assert t.data("c1") == t.data("c2") == {"disposition": "queued"}
    assert t.data("c3")["pendingMessageCount"] == 2
    texts = [m["content"][0]["text"] for m in t.data("c5")["messages"] if m["role"] in ("user", "assistant")]
    assert texts == ["go", "steered early", "A", "followed early", "B"]  # steer in the first turn
    assert t.data("c7") == {"steering": ["to be cleared"], "followUp": []}
    assert _events_of(t, "queue_update")[-1] == {"type": "queue_update", "steering": [], "followUp": []}
    assert t.data("c8")["pendingMessageCount"] == 0


@pytest.mark.slow
@in_flow_group("streaming_queue")
async def test_queueing_while_streaming(tmp_path: Path) -> None:
    t = await run_ours("streaming_queue", tmp_path)
    assert t.data("c2") == t.data("c3") == t.data("c7") == {"disposition": "queued"}
    assert t.responses["c4"]["error"] == (
        "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message.")
    assert t.data("c8") == {"steering": [], "followUp": ["queued via prompt"]}
    assert "data" not in t.responses["c9"]
    assert [e["aborted"] for e in _events_of(t, "agent_settled")] == [False, True]
    texts = [m["content"][0]["text"] if m["content"] else "" for m in t.data("c10")["messages"]
             if m["role"] == "user"]
    assert texts == ["stream please", "steer now", "follow later", "stream again"]


@pytest.mark.slow
@in_flow_group("resources")
async def test_templates_skills_and_images(tmp_path: Path) -> None:
    t = await run_ours("resources", tmp_path)
    commands = [c for c in t.data("c1")["commands"] if c["sourceInfo"].get("source") != "builtin"]
    assert [(c["name"], c["source"], c["description"]) for c in commands] == [
        ("review", "prompt", "Review a file"), ("skill:greeter", "skill", "Greets people politely")]
    assert commands[0]["sourceInfo"] == {"path": str(t.side.agent_dir / "prompts" / "review.md"), "source": "auto",
                                         "scope": "user", "origin": "top-level", "baseDir": str(t.side.agent_dir)}
    users = [m for m in t.data("c5")["messages"] if m["role"] == "user"]
    assert users[0]["content"] == [{"type": "text", "text": "Please review main.py carefully."}]
    assert users[1]["content"][0]["text"].startswith('<skill name="greeter"')
    assert users[2]["content"][1] == {"type": "image", "data": PIXEL_PNG, "mimeType": "image/png"}
    image_part = t.side.server.requests[-1]["body"]["messages"][-1]["content"][1]
    assert image_part == {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PIXEL_PNG}"}}


@pytest.mark.slow
@in_flow_group("in_memory")
async def test_in_memory_session_forks_and_clones_without_files(tmp_path: Path) -> None:
    t = await run_ours("in_memory", tmp_path)
    assert t.responses["c1"]["error"] == "Cannot export in-memory session to HTML"
    assert t.data("c4") == {"cancelled": False} and "sessionFile" not in t.data("c5")
    assert t.data("c7") == {"text": "and this", "cancelled": False}
    assert [m["role"] for m in t.data("c8")["messages"]] == ["system", "user", "assistant"]
    assert [e["type"] for e in t.data("c11")["entries"]] == ["model_change", "thinking_level_change"]
    assert t.responses["c12"]["error"] == "Cannot export in-memory session to HTML"
    assert t.side.session_files() == []
