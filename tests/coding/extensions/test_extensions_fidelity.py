"""Issue 12 (extension API gaps): each feature is a shipped example under ``examples/extensions/``
(so the documented code runs), played over real ``pi --mode rpc`` pipes against a fake LLM, and,
where the behaviour shows from outside, against the reference pi 1.6.0 with the same extension in
TypeScript (skipped without the reference)."""

from __future__ import annotations

import json
import shutil
import textwrap
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.reference.test_extensions_parity import comparable
from tests.reference.test_rpc_reference import differences
from tests.support.compiled_once import stable_source
from tests.support.fakes.llm_server import FakeLLMServer
from tests.support.rpc_compare import (
    Conversation,
    Played,
    Record,
    Scenario,
    Workspace,
    needs_reference,
    only,
    play,
)
from tests.support.run_once import RunOnce, shared_run

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "extensions"


EnvOf = Callable[[str], dict[str, str]]  # the fake LLM's URL -> extra environment for the side


_OURS: RunOnce[Played] = RunOnce()
"""Our runs, per process and inputs: a test of ours alone and its comparison with the reference read
the same run (the two share a group, ``pair``)."""


def pair(name: str) -> pytest.MarkDecorator:
    """The group of a test of ours alone and its comparison, which read the same run of ours."""
    return shared_run(f"extension-example-{name}")


async def play_example(kind: str, example: str, ts: str, drive: Callable[[Conversation], Awaitable[None]],
                       root: Path, args: tuple[str, ...] = (), script: list[dict[str, Any]] | None = None,
                       env_of: EnvOf | None = None, prepare: Callable[[Workspace], None] | None = None) -> Played:
    """Play ``drive`` with the example (ours) or its TypeScript twin (reference) loaded by ``-e``; our
    side is played the first time only for the same inputs, and each caller gets its own copy."""
    if kind != "ours":
        return await _play_example(kind, example, ts, drive, root, args, script, env_of, prepare)
    key = (example, drive, args, json.dumps(script, sort_keys=True, default=repr), env_of, prepare)
    return await _OURS.get(key, lambda: _play_example(kind, example, ts, drive, root, args, script, env_of, prepare))


async def _play_example(kind: str, example: str, ts: str, drive: Callable[[Conversation], Awaitable[None]],
                        root: Path, args: tuple[str, ...], script: list[dict[str, Any]] | None,
                        env_of: EnvOf | None, prepare: Callable[[Workspace], None] | None) -> Played:
    folder = root / f"{kind}-ext"
    folder.mkdir(parents=True)
    if kind == "ours":
        path = EXAMPLES / example  # loaded where it is shipped (it may name files next to it)
    else:
        path = stable_source("reference-ext/ext.ts", textwrap.dedent(ts))  # compiled once across runs
    scenario = Scenario(script or [], drive, args=("--no-session", "-e", str(path), *args))
    if env_of is None and prepare is None:
        return await play(kind, scenario, root)
    with FakeLLMServer() as server:
        server.add(*scenario.script)
        workspace = Workspace.create(root / kind, server.url)
        workspace.env.update(env_of(server.url) if env_of is not None else {})
        if prepare is not None:
            prepare(workspace)
        proc = await workspace.spawn(kind, *scenario.args)
        conversation = Conversation(proc, server, workspace)
        try:
            await drive(conversation)
        finally:
            await proc.kill()
        return Played(conversation.records, list(server.requests), workspace)


def notes(records: list[Record]) -> list[str]:
    return [r["message"] for r in only(records, "extension_ui_request") if r["method"] == "notify"]


def assert_same(ours: Played, reference: Played) -> None:
    our_records, our_requests = comparable(ours)
    their_records, their_requests = comparable(reference)
    found = differences(our_records, their_records, "records") + differences(our_requests, their_requests, "requests")
    assert not found, "\n".join(found)


# --------------------------------------------------------------------------- command-line flags, --tools

FLAGS_TS = """
export default function (pi) {
  pi.registerFlag("plan", { type: "boolean", default: false, description: "Start in plan mode" });
  pi.registerFlag("profile", { type: "string", default: "careful", description: "How much to check" });
  pi.registerTool({
    name: "plan_step", label: "Plan step", description: "Record one step of the plan",
    parameters: { type: "object", properties: { step: { type: "string" } }, required: ["step"] },
    defaultActive: false,
    async execute(id, params) { return { content: [{ type: "text", text: `planned: ${params.step}` }] }; },
  });
  pi.registerCommand("flags", {
    description: "Show the flags this extension got",
    handler: async (args, ctx) => {
      const state = { plan: pi.getFlag("plan"), profile: pi.getFlag("profile"), active: pi.getActiveTools() };
      ctx.ui.notify(JSON.stringify(state), "info");
    },
  });
}
"""


async def _flags(conv: Conversation) -> None:
    await conv.request({"type": "prompt", "message": "/flags"})  # the notify comes before the response


FLAG_CASES = {
    "given": (("--plan", "--profile", "fast", "--tools", "read,plan_step"),
              {"plan": True, "profile": "fast", "active": ["read", "plan_step"]}),
    "defaults": ((), {"plan": False, "profile": "careful", "active": ["read", "bash", "edit", "write"]}),
    "allowlist": (("--tools", "read,bash"), {"plan": False, "profile": "careful", "active": ["read", "bash"]}),
    "inline": (("--profile=quick", "--plan=yes", "--tools", "+plan_step"),
               {"plan": True, "profile": "quick", "active": ["read", "bash", "edit", "write", "plan_step"]}),
}


@pytest.mark.parametrize("case", [pytest.param(case, marks=pair(f"flags-{case}")) for case in FLAG_CASES])
@pytest.mark.slow
async def test_extension_flags_on_the_command_line(case: str, tmp_path: Path) -> None:
    args, expected = FLAG_CASES[case]
    ours = await play_example("ours", "cli_flags.py", FLAGS_TS, _flags, tmp_path, args)
    assert [json.loads(note) for note in notes(ours.records)] == [expected]


@needs_reference
@pytest.mark.parametrize("case", [pytest.param(case, marks=pair(f"flags-{case}")) for case in FLAG_CASES])
async def test_extension_flags_match_reference(case: str, tmp_path: Path) -> None:
    args, _ = FLAG_CASES[case]
    reference = await play_example("reference", "cli_flags.py", FLAGS_TS, _flags, tmp_path, args)
    ours = await play_example("ours", "cli_flags.py", FLAGS_TS, _flags, tmp_path, args)
    assert notes(ours.records) == notes(reference.records)


async def _exit_status(kind: str, root: Path, *args: str) -> tuple[int, list[str]]:
    """Start one side with the flags example and ``args``; its exit status and its ``Error:`` lines."""
    with FakeLLMServer() as server:
        workspace = Workspace.create(root / kind, server.url)
        path = root / kind / ("ext.py" if kind == "ours" else "ext.ts")
        if kind == "ours":
            shutil.copy(EXAMPLES / "cli_flags.py", path)
        else:
            path.write_text(textwrap.dedent(FLAGS_TS))
        proc = await workspace.spawn(kind, "--no-session", "-e", str(path), *args)
        await proc.close_stdin()
        assert proc.proc.stderr is not None
        stderr = (await proc.proc.stderr.read()).decode()
        status = await proc.proc.wait()
    return status, [line for line in stderr.splitlines() if line.startswith("Error:")]


FLAG_ERRORS = {
    "unknown": (("--nope", "--plan", "--nope-too=1"), ["Error: Unknown options: --nope, --nope-too"]),
    "no value": (("--profile",), ['Error: Extension flag "--profile" requires a value']),
}


@pytest.mark.parametrize("case", list(FLAG_ERRORS))
async def test_bad_extension_flags_stop_start_up(case: str, tmp_path: Path) -> None:
    args, errors = FLAG_ERRORS[case]
    assert await _exit_status("ours", tmp_path, *args) == (1, errors)


async def test_boolean_flag_refuses_the_word_pi_would_drop(tmp_path: Path) -> None:
    """pi sets ``--plan`` and silently drops ``hello`` (a print-mode prompt); we refuse and say why."""
    status, errors = await _exit_status("ours", tmp_path, "--plan", "hello")
    assert status == 1
    assert errors == ['Error: Extension flag "--plan" takes no value, but "hello" follows it; '
                      "put that word before the flag"]


@needs_reference
@pytest.mark.parametrize("case", list(FLAG_ERRORS))
async def test_bad_extension_flags_match_reference(case: str, tmp_path: Path) -> None:
    args, _ = FLAG_ERRORS[case]
    assert await _exit_status("ours", tmp_path, *args) == await _exit_status("reference", tmp_path, *args)


# --------------------------------------------------------------------------- providers and provider events

GATEWAY_TS = """
export default function (pi) {
  pi.registerProvider("gateway", {
    baseUrl: process.env.GATEWAY_URL ?? "https://llm.example.com/v1",
    apiKey: "$GATEWAY_KEY",
    api: "openai-completions",
    headers: { "x-team": "platform", "x-debug": "on" },
    models: [{ id: "team-model", name: "Team model", reasoning: false, input: ["text"],
               cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: 32000, maxTokens: 2048 }],
  });
  const seen = { statuses: [], contentTypes: [], streamEvents: 0 };
  pi.on("before_provider_headers", (event) => {
    event.headers["x-trace"] = "pi-gateway";
    event.headers["x-debug"] = null;
  });
  pi.on("after_provider_response", (event) => {
    seen.statuses.push(event.status);
    seen.contentTypes.push(event.headers["content-type"]);
  });
  pi.on("provider_stream_event", () => { seen.streamEvents += 1; });
  pi.registerCommand("gateway", {
    description: "What the gateway handlers saw; 'off' removes it",
    handler: async (args, ctx) => {
      if (args.trim() === "off") {
        pi.unregisterProvider("gateway");
        ctx.ui.notify("gateway removed", "info");
      } else {
        ctx.ui.notify(JSON.stringify(seen), "info");
      }
    },
  });
}
"""


def _gateway_env(url: str) -> dict[str, str]:
    return {"GATEWAY_URL": f"{url}/v1", "GATEWAY_KEY": "gateway-secret"}


def _model_names(response: Record) -> list[str]:
    return sorted(f"{m['provider']}/{m['id']}" for m in response["data"]["models"])


async def _gateway(conv: Conversation) -> None:
    conv.records.append({"type": "listed", "models": _model_names(await conv.request({"type": "get_available_models"}))})
    await conv.prompt("hello gateway")
    state = await conv.request({"type": "get_state"})
    conv.records.append({"type": "model", "model": f"{state['data']['model']['provider']}/{state['data']['model']['id']}"})
    await conv.request({"type": "prompt", "message": "/gateway"})
    await conv.request({"type": "prompt", "message": "/gateway off"})
    if not any(_removed(r) for r in conv.records):  # pi may answer the prompt before its handler ends
        await conv.read_until(_removed)
    conv.records.append({"type": "listed", "models": _model_names(await conv.request({"type": "get_available_models"}))})
    refused = await conv.request({"type": "set_model", "provider": "gateway", "modelId": "team-model"})
    conv.records.append({"type": "set_model", "success": refused["success"]})


GATEWAY_ARGS = ("--provider", "gateway", "--model", "team-model")


def _removed(record: Record) -> bool:
    """The notice of ``/gateway off``, sent once the provider is unregistered."""
    return record.get("method") == "notify" and record.get("message") == "gateway removed"


def _gateway_outcome(played: Played) -> dict[str, Any]:
    """What the client and the gateway saw, in a form both sides share."""
    request = played.requests[0]
    return {
        "listed": [r["models"] for r in played.records if r["type"] == "listed"],
        "model": next(r["model"] for r in played.records if r["type"] == "model"),
        "notes": notes(played.records),
        "set_model": next(r["success"] for r in played.records if r["type"] == "set_model"),
        "sent": {name: request["headers"].get(name) for name in ("x-team", "x-trace", "x-debug", "authorization")},
        "bodyModel": request["body"]["model"],
    }


@pytest.mark.slow
@pair("gateway")
async def test_register_provider_and_provider_events(tmp_path: Path) -> None:
    ours = await play_example("ours", "gateway_provider.py", GATEWAY_TS, _gateway, tmp_path, GATEWAY_ARGS,
                              [{"content": [{"type": "text", "text": "via the gateway"}]}], _gateway_env)
    outcome = _gateway_outcome(ours)
    assert outcome["listed"] == [["fake/fake-model", "gateway/team-model"], ["fake/fake-model"]]
    assert outcome["model"] == "gateway/team-model" and outcome["bodyModel"] == "team-model"
    assert outcome["sent"] == {"x-team": "platform", "x-trace": "pi-gateway", "x-debug": None,
                               "authorization": "Bearer gateway-secret"}
    seen = json.loads(outcome["notes"][0])
    assert seen["statuses"] == [200] and seen["contentTypes"][0].startswith("text/event-stream")
    assert seen["streamEvents"] >= 2  # the text chunk(s) and the finish chunk, each seen raw
    assert outcome["notes"][1] == "gateway removed" and outcome["set_model"] is False


@needs_reference
@pair("gateway")
async def test_register_provider_matches_reference(tmp_path: Path) -> None:
    script = [{"content": [{"type": "text", "text": "via the gateway"}]}]
    reference = await play_example("reference", "gateway_provider.py", GATEWAY_TS, _gateway, tmp_path,
                                   GATEWAY_ARGS, script, _gateway_env)
    ours = await play_example("ours", "gateway_provider.py", GATEWAY_TS, _gateway, tmp_path, GATEWAY_ARGS,
                              script, _gateway_env)
    assert _gateway_outcome(ours) == _gateway_outcome(reference)


def _list_models(kind: str, root: Path) -> list[str]:
    """``pi --list-models`` with the gateway example (or its twin): the rows of the table."""
    import os
    import subprocess

    from tests.support.reference_pi import REFERENCE_NODE_BIN, REFERENCE_PI
    from tests.support.rpc_helpers import PYTHON

    workspace = Workspace.create(root / kind, "http://127.0.0.1:9")
    path = root / kind / ("ext.py" if kind == "ours" else "ext.ts")
    if kind == "ours":
        shutil.copy(EXAMPLES / "gateway_provider.py", path)
        argv = [PYTHON, "-m", "pi_coding_agent"]
    else:
        path.write_text(textwrap.dedent(GATEWAY_TS))
        argv = [str(REFERENCE_PI)]
    env = {**workspace.env, **_gateway_env("http://127.0.0.1:9"),
           "PATH": f"{REFERENCE_NODE_BIN}:{os.environ.get('PATH', '')}"}
    done = subprocess.run([*argv, "--list-models", "team", "-e", str(path)], cwd=workspace.cwd, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return [" ".join(line.split()) for line in done.stdout.splitlines()]


@pytest.mark.slow
def test_list_models_shows_extension_providers(tmp_path: Path) -> None:
    assert _list_models("ours", tmp_path) == ["provider model context max-out thinking images",
                                              "gateway team-model 32K 2.0K no no"]


@needs_reference
def test_list_models_matches_reference(tmp_path: Path) -> None:
    assert _list_models("ours", tmp_path) == _list_models("reference", tmp_path)


# --------------------------------------------------------------------------- ctx.execute_tool

TOOL_RUNNER_TS = """
export default function (pi) {
  pi.registerTool({
    name: "file_report", label: "File report", description: "Report on one file",
    parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
    async execute(toolCallId, params, signal, onUpdate, ctx) {
      const callable = ctx.tools.map((tool) => tool.name).sort();
      const read = await ctx.executeTool("read", { path: params.path });
      const text = read.result.content.filter((b) => b.type === "text").map((b) => b.text).join("");
      const missing = await ctx.executeTool("no_such_tool", {});
      const updates = [];
      await ctx.executeTool("bash", { command: "echo streamed" }, { onUpdate: (partial) => updates.push(partial) });
      const streamed = updates.some((u) => u.content.some((b) => (b.text ?? "").includes("streamed")));
      const lines = text.split(/\\r?\\n/).filter((line, i, all) => i < all.length - 1 || line !== "").length;
      return { content: [{ type: "text", text: `${lines} lines; read failed: ${read.isError}; ` +
        `missing failed: ${missing.isError}; bash streamed: ${streamed}; can call: ${callable.join(",")}` }] };
    },
  });
}
"""

TOOL_RUNNER_SCRIPT = [
    {"content": [{"type": "toolCall", "id": "call_1", "name": "file_report", "arguments": {"path": "notes.txt"}}]},
    {"content": [{"type": "text", "text": "reported"}]},
]


async def _tool_runner(conv: Conversation) -> None:
    (conv.workspace.cwd / "notes.txt").write_text("one\ntwo\nthree\n")
    await conv.prompt("report on notes.txt")


def _nested_view(played: Played) -> dict[str, Any]:
    executions = [(r["type"], r["toolCallId"], r["toolName"], r.get("parentToolCallId"), r.get("isError"))
                  for r in played.records if r["type"] in ("tool_execution_start", "tool_execution_end")]
    result = next(r["message"] for r in played.records
                  if r["type"] == "message_end" and r["message"]["role"] == "toolResult")
    nested = result.get("nestedCalls")
    calls = None if nested is None else [{k: v for k, v in c.items() if k != "durationMs"} for c in nested["calls"]]
    return {"executions": executions, "text": result["content"][0]["text"], "calls": calls,
            "complete": None if nested is None else nested["complete"],
            "sentToModel": [m["role"] for m in played.requests[-1]["body"]["messages"] if m["role"] != "system"]}


@pytest.mark.slow
@pair("tool-runner")
async def test_execute_tool_runs_nested_calls(tmp_path: Path) -> None:
    ours = await play_example("ours", "tool_runner.py", TOOL_RUNNER_TS, _tool_runner, tmp_path,
                              script=TOOL_RUNNER_SCRIPT)
    view = _nested_view(ours)
    assert view["executions"] == [
        ("tool_execution_start", "call_1", "file_report", None, None),
        ("tool_execution_start", "call_1/1", "read", "call_1", None),
        ("tool_execution_end", "call_1/1", "read", "call_1", False),
        ("tool_execution_start", "call_1/2", "no_such_tool", "call_1", None),
        ("tool_execution_end", "call_1/2", "no_such_tool", "call_1", True),
        ("tool_execution_start", "call_1/3", "bash", "call_1", None),
        ("tool_execution_end", "call_1/3", "bash", "call_1", False),
        ("tool_execution_end", "call_1", "file_report", None, False)]
    assert view["text"] == ("3 lines; read failed: false; missing failed: true; bash streamed: true; "
                            "can call: bash,edit,file_report,read,write")
    assert view["calls"][0] == {"id": "call_1/1", "name": "read", "status": "ok", "arguments": {"path": "notes.txt"}}
    assert view["calls"][1]["status"] == "error" and view["complete"] is True
    assert view["sentToModel"] == ["user", "assistant", "tool"]  # nested calls add nothing to the transcript


@needs_reference
@pair("tool-runner")
async def test_execute_tool_matches_reference(tmp_path: Path) -> None:
    reference = await play_example("reference", "tool_runner.py", TOOL_RUNNER_TS, _tool_runner, tmp_path,
                                   script=TOOL_RUNNER_SCRIPT)
    ours = await play_example("ours", "tool_runner.py", TOOL_RUNNER_TS, _tool_runner, tmp_path,
                              script=TOOL_RUNNER_SCRIPT)
    assert _nested_view(ours) == _nested_view(reference)


# --------------------------------------------------------------------------- resources_discover

RESOURCES_TS = f"""
export default function (pi) {{
  pi.on("resources_discover", () => ({{
    skillPaths: [{json.dumps(str(EXAMPLES / "team_resources" / "skills"))}],
    promptPaths: [{json.dumps(str(EXAMPLES / "team_resources" / "prompts"))}],
  }}));
}}
"""


async def _resources(conv: Conversation) -> None:
    await conv.request({"type": "get_state"})  # session_start and resources_discover have run by now
    commands = await conv.request({"type": "get_commands"})
    conv.records.append({"type": "commands", "commands": commands["data"]["commands"]})
    await conv.prompt("/skill:review the last commit")


def _resources_view(played: Played) -> dict[str, Any]:
    commands = next(r["commands"] for r in played.records if r["type"] == "commands")
    added = [(c["name"], c.get("description"), c["source"], c["sourceInfo"]["source"].split(":")[0],
              c["sourceInfo"]["scope"]) for c in commands if c["sourceInfo"]["source"].startswith("extension:")]
    prompt = played.requests[0]["body"]["messages"][-1]["content"]
    text = prompt if isinstance(prompt, str) else "".join(part.get("text", "") for part in prompt)
    return {"added": added, "skillInPrompt": "Run the tests that cover the change" in text}


@pytest.mark.slow
@pair("resources")
async def test_resources_discover_adds_skills_and_templates(tmp_path: Path) -> None:
    ours = await play_example("ours", "team_resources.py", RESOURCES_TS, _resources, tmp_path,
                              script=[{"content": [{"type": "text", "text": "reviewed"}]}])
    view = _resources_view(ours)
    assert sorted(view["added"]) == [
        ("skill:review", "Review a change the way the team does (tests first, then naming, then docs).", "skill",
         "extension", "temporary"),
        ("standup", "Summarise yesterday's work for the stand-up", "prompt", "extension", "temporary")]
    assert view["skillInPrompt"]
    commands = next(r["commands"] for r in ours.records if r["type"] == "commands")
    assert {c["sourceInfo"]["source"] for c in commands if c["name"] in ("skill:review", "standup")} == {
        "extension:team_resources"}


@needs_reference
@pair("resources")
async def test_resources_discover_matches_reference(tmp_path: Path) -> None:
    script = [{"content": [{"type": "text", "text": "reviewed"}]}]
    reference = await play_example("reference", "team_resources.py", RESOURCES_TS, _resources, tmp_path, script=script)
    ours = await play_example("ours", "team_resources.py", RESOURCES_TS, _resources, tmp_path, script=script)
    assert _resources_view(ours) == _resources_view(reference)


# --------------------------------------------------------------------------- systemPromptOptions

PROMPT_OPTIONS_TS = """
export default function (pi) {
  pi.on("before_agent_start", (event) => {
    event.systemPromptOptions.promptGuidelines.push("Answer in at most three sentences");
    event.systemPromptOptions.contextFiles.push({ path: "/team/STYLE.md", content: "Small functions, clear names." });
  });
  pi.on("before_agent_start", (event, ctx) => {
    const seen = event.systemPrompt.includes("Answer in at most three sentences");
    ctx.ui.notify(`guideline in prompt: ${seen}`, "info");
  });
}
"""


async def _two_prompts(conv: Conversation) -> None:
    await conv.prompt("first")
    await conv.prompt("second")


def _prompt_view(played: Played) -> dict[str, Any]:
    systems = ["\n".join(m["content"] for m in r["body"]["messages"] if m["role"] in ("system", "developer"))
               for r in played.requests]
    return {"notes": notes(played.records),
            "guideline": ["Answer in at most three sentences" in s for s in systems],
            "contextFile": ["/team/STYLE.md" in s and "Small functions, clear names." in s for s in systems]}


@pytest.mark.slow
@pair("prompt-options")
async def test_system_prompt_options_rebuild_the_prompt(tmp_path: Path) -> None:
    script = [{"content": [{"type": "text", "text": "one"}]}, {"content": [{"type": "text", "text": "two"}]}]
    ours = await play_example("ours", "prompt_options.py", PROMPT_OPTIONS_TS, _two_prompts, tmp_path, script=script)
    assert _prompt_view(ours) == {"notes": ["guideline in prompt: true"] * 2, "guideline": [True, True],
                                  "contextFile": [True, True]}


@needs_reference
@pair("prompt-options")
async def test_system_prompt_options_match_reference(tmp_path: Path) -> None:
    script = [{"content": [{"type": "text", "text": "one"}]}, {"content": [{"type": "text", "text": "two"}]}]
    reference = await play_example("reference", "prompt_options.py", PROMPT_OPTIONS_TS, _two_prompts, tmp_path,
                                   script=script)
    ours = await play_example("ours", "prompt_options.py", PROMPT_OPTIONS_TS, _two_prompts, tmp_path, script=script)
    assert _prompt_view(ours) == _prompt_view(reference)


def test_every_example_is_documented_and_played() -> None:
    """An example nobody loads or documents would rot: each is named in docs/extensions.md and played here."""
    docs = (EXAMPLES.parents[1] / "docs" / "extensions.md").read_text()
    played = "".join((Path(__file__).parent / name).read_text() for name in (
        Path(__file__).name, "test_extensions_projects.py", "test_extension_providers.py",
        "test_extension_provider_models.py", "test_extension_provider_store.py"))
    for example in sorted(p.name for p in EXAMPLES.glob("*.py")):
        assert f"`{example}`" in docs, example
        assert f'"{example}"' in played, example


async def _shout(conv: Conversation) -> None:
    await conv.prompt("hello there friend")
    answer = await conv.request({"type": "get_last_assistant_text"})
    conv.records.append({"type": "answer", "text": answer["data"]["text"]})


@pytest.mark.slow
async def test_provider_with_its_own_stream(tmp_path: Path) -> None:
    """Ours only: pi's ``streamSimple`` is a TypeScript function, ours an adapter of ``ai/stream.py``."""
    ours = await play_example("ours", "custom_stream.py", "", _shout, tmp_path, ("--provider", "shouting",
                                                                              "--model", "loud-1"))
    assert next(r["text"] for r in ours.records if r["type"] == "answer") == "HELLO THERE FRIEND"
    end = next(r["message"] for r in ours.records if r["type"] == "message_end" and r["message"]["role"] == "assistant")
    assert (end["provider"], end["api"], end["usage"]["output"], end["stopReason"]) == ("shouting", "shouting-api",
                                                                                        3, "stop")
    deltas = [r["assistantMessageEvent"]["delta"] for r in ours.records if r["type"] == "message_update"
              and r["assistantMessageEvent"]["type"] == "text_delta"]
    assert deltas == ["HELLO", " THERE", " FRIEND"] and ours.requests == []  # no HTTP request at all


def _help_flags(kind: str, root: Path) -> list[str]:
    """The "Extension CLI Flags:" lines of ``pi --help`` with the flags example (or its twin)."""
    import os
    import subprocess

    from tests.support.reference_pi import REFERENCE_NODE_BIN, REFERENCE_PI
    from tests.support.rpc_helpers import PYTHON

    workspace = Workspace.create(root / kind, "http://127.0.0.1:9")
    path = EXAMPLES / "cli_flags.py" if kind == "ours" else root / kind / "ext.ts"
    if kind != "ours":
        path.write_text(textwrap.dedent(FLAGS_TS))
    argv = [PYTHON, "-m", "pi_coding_agent"] if kind == "ours" else [str(REFERENCE_PI)]
    env = {**workspace.env, "PATH": f"{REFERENCE_NODE_BIN}:{os.environ.get('PATH', '')}", "NO_COLOR": "1"}
    done = subprocess.run([*argv, "--help", "-e", str(path)], cwd=workspace.cwd, env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    start = lines.index("Extension CLI Flags:")
    return lines[start + 1:start + 3]


@pytest.mark.slow
def test_help_lists_extension_flags(tmp_path: Path) -> None:
    assert _help_flags("ours", tmp_path) == [f"{'  --plan':<30}Start in plan mode",
                                             f"{'  --profile <value>':<30}How much to check"]


@needs_reference
def test_help_flags_match_reference(tmp_path: Path) -> None:
    assert _help_flags("ours", tmp_path) == _help_flags("reference", tmp_path)
