"""The commands and examples in README.md and docs/ do what the text says (run, not just read)."""

from __future__ import annotations

import itertools
import json
import os
import re
import select
import shlex
import subprocess
import sys
import typing
from pathlib import Path

import pytest

from pi_coding_agent import PI_COMPATIBLE_VERSION, __version__
from pi_coding_agent.coding import events
from pi_coding_agent.coding.modes.rpc.commands import COMMANDS
from tests.support.rpc_helpers import ROOT

README = (ROOT / "README.md").read_text()
DOCS = ROOT / "docs"
RPC_MD = (DOCS / "rpc.md").read_text()


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "HOME": str(tmp_path), "PI_CODING_AGENT_DIR": str(tmp_path / "agent"), **extra}


@pytest.mark.slow
def test_readme_python_example_runs_verbatim(tmp_path):
    (block,) = re.findall(r"```python\n(.*?)```", README, re.S)
    script = tmp_path / "example.py"
    script.write_text(block)
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=_env(tmp_path), capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1] == "You said: Hello"  # the comment in the example
    assert "agent_settled" in lines and lines.index("agent_start") < lines.index("agent_end")


def test_readme_version_example_is_what_pi_prints(tmp_path):
    assert f"(`{PI_COMPATIBLE_VERSION}`) on stdout" in README
    assert f"(`pi-coding-agent-py {__version__}`" in README
    done = subprocess.run([sys.executable, "-m", "pi_coding_agent", "--version"], env=_env(tmp_path),
                          capture_output=True, text=True, timeout=60, check=True)
    assert (done.stdout, done.stderr) == (f"{PI_COMPATIBLE_VERSION}\n", f"pi-coding-agent-py {__version__}\n")


@pytest.mark.slow
def test_readme_faux_script_sentence(tmp_path):
    """"`PI_FAUX_SCRIPT=<file.json>` gives it a list of replies": one scripted text reply comes back."""
    assert "PI_FAUX_SCRIPT" in README
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"content": [{"type": "text", "text": "scripted reply"}]}]))
    done = subprocess.run([sys.executable, "-m", "pi_coding_agent", "--provider", "faux", "--model", "faux-1",
                           "--no-session", "-p", "hi"], env=_env(tmp_path, PI_FAUX_SCRIPT=str(script)),
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, check=False)
    assert (done.returncode, done.stdout) == (0, "scripted reply\n")


@pytest.mark.slow
def test_rpc_md_parse_error_examples(tmp_path):
    table = (DOCS / "rpc.md").read_text()
    documented = re.search(r"the line `not json` gives `([^`]+)`, an empty line `([^`]+)`", table)
    assert documented is not None
    done = subprocess.run([sys.executable, "-m", "pi_coding_agent", "--mode", "rpc", "--no-session"],
                          input=b"not json\n\n", env=_env(tmp_path), capture_output=True, timeout=60, check=False)
    errors = [json.loads(line)["error"] for line in done.stdout.splitlines()]
    assert errors == [f"Failed to parse command: {documented.group(1)}",
                      f"Failed to parse command: {documented.group(2)}"]


@pytest.mark.slow
def test_rpc_md_envelope_examples(tmp_path):
    """The three answers to input that is not a command, shown under "The response envelope"."""
    section = RPC_MD.split("### The response envelope", 1)[1]
    shown = re.findall(r"```json\n(.*?)```", section, re.S)[1].splitlines()
    done = subprocess.run([sys.executable, "-m", "pi_coding_agent", "--mode", "rpc", "--no-session"],
                          input=b'not json\n{}\nnull\n{"id":"30","type":"nope"}\n', env=_env(tmp_path),
                          capture_output=True, timeout=60, check=False)
    assert done.stdout.decode().splitlines() == [shown[0], shown[1], shown[1], shown[2]]


def _model_commands() -> list[tuple[list[str], str]]:
    """The ``pi --mode rpc ...  # comment`` lines of docs/models.md "Choosing a model"."""
    section = (DOCS / "models.md").read_text().split("## Choosing a model", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block is not None
    commands = []
    for line in block.group(1).splitlines():
        command, _, comment = line.partition("#")
        commands.append((shlex.split(command)[1:], comment.strip()))
    return commands


@pytest.mark.parametrize(("argv", "comment"), _model_commands(), ids=lambda value: str(value)[:40])
@pytest.mark.slow
def test_models_md_commands_select_a_model(tmp_path, argv, comment):
    keys = {"ANTHROPIC_API_KEY": "x", "OPENAI_API_KEY": "x", "OPENROUTER_API_KEY": "x"}
    done = subprocess.run([sys.executable, "-m", "pi_coding_agent", *argv, "--no-session"],
                          input=b'{"type":"get_state"}\n', env=_env(tmp_path, **keys), capture_output=True,
                          timeout=60, check=False)
    state = json.loads(done.stdout.splitlines()[0])["data"]
    model = state["model"]
    assert model["id"] != "unknown", comment
    pattern = argv[argv.index("--model") + 1] if "--model" in argv else argv[argv.index("--models") + 1]
    if "--provider" in argv:
        assert model["provider"] == argv[argv.index("--provider") + 1]
    elif "/" in pattern and "," not in pattern:
        assert model["provider"] == pattern.split("/")[0]
    if pattern.endswith(":high"):
        assert state["thinkingLevel"] == "high"


# --------------------------------------------------------------------------- docs/rpc.md, the protocol reference

CLIENT_RECORDS = ("extension_ui_response",)


def _rpc_examples() -> list[list[dict]]:
    """Every ```json block of docs/rpc.md as its list of records (one JSON value per line)."""
    return [[json.loads(line) for line in block.splitlines() if line.strip()]
            for block in re.findall(r"```json\n(.*?)```", RPC_MD, re.S)]


def _event_types() -> dict[str, type]:
    """Event type name -> its TypedDict, from coding/events.py's union."""
    out: dict[str, type] = {}
    for event in typing.get_args(events.AgentEvent):
        for name in typing.get_args(event.__annotations__["type"]):
            out[name] = event
    return out


EVENTS = _event_types()
# RPC-only events, written by the transport rather than the session
RPC_EVENTS = {"bash_execution_update": ({"id", "delta"}, {"delta"})}


def _documented_ui_methods() -> set[str]:
    section = RPC_MD.split("## Extension UI sub-protocol", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `(\w+)` \|", section, re.M))


def test_rpc_md_names_every_command_and_event():
    headings = {name for line in re.findall(r"^#### (.+)$", RPC_MD, re.M) for name in re.findall(r"`(\w+)`", line)}
    assert set(COMMANDS) - headings == set(), "commands without a section in docs/rpc.md"
    assert headings - set(COMMANDS) == set(), "sections for commands that do not exist"
    table = RPC_MD.split("## Events", 1)[1].split("\n## ", 1)[0]
    rows = {name for line in re.findall(r"^\| (`.+?) \|", table, re.M) for name in re.findall(r"`(\w+)`", line)}
    assert (set(EVENTS) | set(RPC_EVENTS)) - rows == set(), "events missing from the table"
    assert rows - set(EVENTS) - set(RPC_EVENTS) == set(), "events in the table that are never emitted"
    assert len(COMMANDS) == 33 and "all 33 commands" in RPC_MD


def _check_record(record: dict) -> None:
    kind = record["type"]
    if kind == "response":
        assert record.get("command", "parse") in {*COMMANDS, "parse"} or record["error"].startswith("Unknown command")
        assert list(record)[:1] != ["type"] or "id" not in record
    elif kind == "extension_ui_request":
        assert record["method"] in _documented_ui_methods(), record
    elif kind in EVENTS:
        event = EVENTS[kind]
        assert set(record) <= set(event.__annotations__) | {"type"} | set(getattr(event, "__optional_keys__", ())), record
        assert set(event.__required_keys__) <= set(record), record
    elif kind in RPC_EVENTS:
        allowed, required = RPC_EVENTS[kind]
        assert required <= set(record) - {"type"} <= allowed, record
    else:
        assert kind in COMMANDS or kind in CLIENT_RECORDS, f"unknown record type {kind!r}"


def test_rpc_md_json_examples_are_known_records():
    records = [record for block in _rpc_examples() for record in block]
    assert len(records) > 80
    for record in records:
        _check_record(record)
    # every command has an example request
    assert set(COMMANDS) - {record["type"] for record in records} == set()


class _Live:
    """``pi --mode rpc`` over pipes, answering extension dialogs the way the documented client did."""

    def __init__(self, tmp_path: Path, extension: Path, answers: dict[str, dict]) -> None:
        agent = tmp_path / "agent"
        agent.mkdir()
        (agent / "settings.json").write_text('{"compaction": {"keepRecentTokens": 10}}')
        self.answers = answers
        self.proc = subprocess.Popen([sys.executable, "-m", "pi_coding_agent", "--mode", "rpc", "--provider", "faux",
                                      "--model", "faux-1", "-e", str(extension)], cwd=tmp_path, env=_env(tmp_path),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.count = 0
        self.buffer = b""

    def _line(self) -> bytes:
        assert self.proc.stdout is not None
        while b"\n" not in self.buffer:
            ready, _, _ = select.select([self.proc.stdout], [], [], 60)
            assert ready, "no record from pi within 60 s"
            chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
            assert chunk, "pi closed stdout"
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line

    def _read(self) -> dict:
        record = json.loads(self._line())
        if record["type"] == "extension_ui_request" and record["method"] in self.answers:
            self.write({"type": "extension_ui_response", "id": record["id"], **self.answers[record["method"]]})
        return record

    def write(self, record: dict) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(record).encode() + b"\n")
        self.proc.stdin.flush()

    def call(self, request: dict) -> tuple[list[dict], dict, list[dict]]:
        """(records before the response, the response, records after it until agent_settled if a run started)."""
        self.write(request)
        before: list[dict] = []
        while (record := self._read())["type"] != "response" or record.get("id") != request.get("id"):
            before.append(record)
        after: list[dict] = []
        if request["type"] == "prompt" and record.get("data") == {"disposition": "started"}:
            while (after[-1:] or [{}])[0].get("type") != "agent_settled":
                after.append(self._read())
        return before, record, after

    def ask(self, kind: str, **fields: str) -> dict:
        self.count += 1
        return self.call({"id": f"setup{self.count}", "type": kind, **fields})[1]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def _shape(value: object, depth: int = 2) -> object:
    """Keys down to ``depth`` levels: what a documented example must share with a live answer."""
    if isinstance(value, dict) and depth:
        return {key: _shape(item, depth - 1) for key, item in value.items()}
    return isinstance(value, dict)


def _shown(records: list[dict]) -> list[str]:
    """Record types as the page shows them: without the session's system message (left out for length)."""
    return [r["type"] for r in records if r["type"] not in CLIENT_RECORDS
            and not (r["type"] in ("message_start", "message_end") and r["message"]["role"] == "system")]


def _prepare(live: _Live, request: dict, documented: dict) -> dict:
    """Bring the session into the state the example's text describes; returns the request to send."""
    if request["type"] == "compact":
        if documented["success"]:  # "after three long prompts"
            for index in range(3):
                live.call({"id": f"long{index}", "type": "prompt", "message": f"message number {index} " * 20})
        else:  # "a session with a single exchange"
            live.ask("new_session")
            live.call({"id": "one", "type": "prompt", "message": "Hello"})
    if request["type"] in ("fork", "clone") and documented["success"]:
        live.call({"id": "saved", "type": "prompt", "message": "first"})
        if request["type"] == "fork":
            return {**request, "entryId": live.ask("get_fork_messages")["data"]["messages"][0]["entryId"]}
    if request["type"] == "switch_session":
        return {**request, "sessionPath": live.ask("get_state")["data"]["sessionFile"]}
    return request


def _documented_pairs() -> list[tuple[dict, list[dict], dict, list[dict]]]:
    """(request, records shown before its response, the response, records shown after it)."""
    pairs = []
    for block in _rpc_examples():
        for index, request in enumerate(block):
            if request["type"] not in COMMANDS:
                continue
            rest = block[index + 1:]
            position = next(i for i, r in enumerate(rest) if r["type"] == "response" and r.get("id") == request["id"])
            following = next((i for i, r in enumerate(rest) if r["type"] in COMMANDS), len(rest))
            pairs.append((request, rest[:position], rest[position], rest[position + 1:following]))
    return pairs


@pytest.mark.timeout(300)  # some 40 commands and five runs, on a shared machine
@pytest.mark.slow
def test_rpc_md_examples_match_a_live_process(tmp_path):
    """Each documented command, replayed in order against ``pi --mode rpc --provider faux``, gets the
    documented outcome: same success and error text, same keys in its data (two levels deep), the same
    records before the response and, for a prompt, the same run of events after it."""
    extension = tmp_path / "askme.py"
    extension.write_text(re.findall(r"```python\n(# askme\.py\n.*?)```", RPC_MD, re.S)[0])
    pairs = _documented_pairs()
    answers = {r["method"]: {k: v for k, v in response.items() if k not in ("type", "id")}
               for _, before, _, _ in pairs for r, response in itertools.pairwise(before)
               if r["type"] == "extension_ui_request" and response["type"] == "extension_ui_response"}
    live = _Live(tmp_path, extension, answers)
    try:
        for request, before, documented, after in pairs:
            got_before, got, got_after = live.call(_prepare(live, request, documented))
            assert got["success"] == documented["success"], (request, got)
            assert got.get("error") == documented.get("error"), request
            assert _shape(got.get("data")) == _shape(documented.get("data")), request
            if request["type"] == "get_commands":  # the order is part of the contract
                assert [c["name"] for c in got["data"]["commands"]] == [c["name"] for c in documented["data"]["commands"]]
            assert _shown(got_before) == _shown(before), request
            if after:
                assert _shown(got_after) == _shown(after), request
    finally:
        live.close()


CLI_ROWS = [  # (arguments, the row of docs/rpc.md's command-line and difference tables, exit status)
    (["--mode", "rpc", "--nope"], "Unknown long option (`--nope`)", 1),
    (["--mode", "rpc", "-x"], "Unknown long option (`--nope`)", 2),
    (["--mode", "rpc", "@notes.txt"], "`@file` in RPC mode", 1),
    (["--mode", "rpc", "--provider", "faux"], "`--provider` without `--model`", 1),
    (["--mode", "rpc", "-e", "builtin:nope"], "`-e builtin:<name>`", 1),
    (["-r", "-p", "hi"], "`-r` / `--resume`", 2),
    (["--provider", "faux", "--model", "faux-1", "-p", "@.", "hi"], "`@dir` (a directory)", 1),
    (["-e", "flag.py", "--plan", "fix the bug", "-p", "--provider", "faux", "--model", "faux-1"],
     'A boolean extension flag followed by a word (`pi --plan "fix the bug"`)', 1),
]


def _matches(documented: str, actual: str) -> bool:
    """``<placeholder>`` and ``…`` in a documented message stand for any text."""
    parts = re.split(r"<[^>]+>|…", documented)
    return re.fullmatch(".*?".join(map(re.escape, parts)), actual) is not None


@pytest.mark.parametrize(("argv", "topic", "status"), CLI_ROWS, ids=lambda value: str(value)[:30])
@pytest.mark.slow
def test_rpc_md_command_line_rows(tmp_path, argv, topic, status):
    """The error line and exit status a row of docs/rpc.md gives are what the command prints."""
    (row,) = [line for line in RPC_MD.splitlines() if line.startswith(f"| {topic} |")]
    (tmp_path / "notes.txt").write_text("notes")
    (tmp_path / "flag.py").write_text('def setup(pi):\n    pi.register_flag("plan", type="boolean")\n')
    done = subprocess.run([sys.executable, "-m", "pi_coding_agent", *argv], cwd=tmp_path, env=_env(tmp_path),
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, check=False)
    first = done.stderr.splitlines()[0]
    documented = [text for text in re.findall(r"`([^`]+)`", row) if text.startswith("Error:")]
    if "-x" in argv:  # the row's wording: "single-dash ones are refused by the parser, exit 2"
        documented = ["Error: Unknown option: <option>"]
    assert any(_matches(text, first) for text in documented), (first, documented)
    assert done.returncode == status and f"exit {status}" in row


def test_rpc_md_error_texts_exist():
    """Each error text quoted in the command reference is one the code can produce (placeholders aside)."""
    section = RPC_MD.split("## Commands", 1)[1].split("\n## Events", 1)[0]
    quoted = [" ".join(text.split()) for text in re.findall(r"`([A-Z][^`{]*? [^`]*?)`", section, re.S)]
    source = " ".join(path.read_text() for path in (ROOT / "src").rglob("*.py"))
    checked = 0
    for text in quoted:
        for fragment in re.split(r"<[^>]+>|…", text):
            if len(fragment.strip()) >= 8:
                assert fragment.strip() in source, text
                checked += 1
    assert checked >= 15
