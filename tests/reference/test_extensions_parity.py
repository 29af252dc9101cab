"""Issue 8: an RPC client cannot tell a Python extension from a TypeScript one.

Each scenario is one extension written twice, in TypeScript for the reference pi 1.6.0 (``-e ext.ts``)
and in Python for ours (``-e ext.py``), and one RPC conversation played against both with the same
fake LLM script (``tests/support/rpc_compare.py``). Every record is compared after normalisation (UI request
UUIDs and entry ids numbered by first appearance, timestamps, durations, temp paths, the extension's
own path): responses, events, ``extension_ui_request`` records and their order, plus what the model
received. Comparisons skip without the reference; each scenario's expectations are also asserted on
our process alone.
"""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, cast

import pytest

from tests.reference.test_rpc_reference import (
    Normaliser,
    _update_kinds,
    _without_builtin_commands,
    differences,
)
from tests.support.compiled_once import stable_source
from tests.support.rpc_compare import Conversation, Played, Record, Scenario, needs_reference, only, play
from tests.support.run_once import RunOnce, shared_run

if TYPE_CHECKING:
    from tests.reference.test_rpc_reference import Side

Drive = Callable[[Conversation], Awaitable[None]]
Check = Callable[[list[Record], list[dict[str, Any]]], None]

# Every Python extension gets these helpers, so that text it reports reads as TypeScript's would.
PY_PRELUDE = """
import json


def js(value):
    if value is None:
        return "undefined"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def stringify(value):
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
"""

# --------------------------------------------------------------------------- harness


@dataclass
class Parity:
    """One extension in both languages and the conversation that exercises it."""

    ts: str
    py: str
    drive: Drive
    check: Check  # what our process alone must show (records, LLM request bodies)
    script: list[dict[str, Any]] = field(default_factory=list)


async def play_side(kind: str, parity: Parity, root: Path, suffix: str | None = None) -> Played:
    """Write the side's extension and play the conversation; ``kind`` is ``ours`` or ``reference``,
    ``suffix`` the extension's language (by default ``.py`` for ours, ``.ts`` for the reference)."""
    suffix = suffix or (".py" if kind == "ours" else ".ts")
    if suffix == ".py":
        path = root / f"{kind}-ext" / "ext.py"
        path.parent.mkdir(parents=True)
        path.write_text(textwrap.dedent(parity.py) + PY_PRELUDE)
    else:  # at a path of its source, compiled by jiti once across runs
        path = stable_source(f"{kind}-ext/ext.ts", textwrap.dedent(parity.ts))
    return await play(kind, Scenario(parity.script, parity.drive, args=("--no-session", "-e", str(path))), root)


_PLAYED: RunOnce[Played] = RunOnce()
"""Each run of a named scenario, played once per process: the run of our pi with ``ext.py`` serves
both the check of ours alone and the comparison, the reference's run with ``ext.ts`` both comparisons
(here and in tests/coding/extensions/test_typescript_extensions.py), and so on."""


async def play_named(kind: str, name: str, root: Path, suffix: str | None = None) -> Played:
    """``play_side`` for ``SCENARIOS[name]``, played the first time only in this process."""
    suffix = suffix or (".py" if kind == "ours" else ".ts")  # the reference's ext.ts run is one run
    return await _PLAYED.get((kind, name, suffix), lambda: play_side(kind, SCENARIOS[name], root, suffix))


def scenario_params(names: Iterable[str]) -> list[Any]:
    """The scenario names as parameters, each in the ``shared_run`` group of its scenario."""
    return [pytest.param(name, marks=shared_run(f"extension-{name}")) for name in names]


_EXT_PATH = re.compile(r"\S*/(ours|reference)-ext/ext\.(py|ts)")
_WALL_TIME = re.compile(r'"wall_time_seconds":[0-9.]+')  # bash's timing, also inside reported JSON


def bodies(requests: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The non-system messages of each LLM request body."""
    return [[m for m in r["body"]["messages"] if m["role"] not in ("system", "developer")] for r in requests]


class ExtensionNormaliser(Normaliser):
    """The shared normaliser, plus the extension's own path (``ext.py`` for us, ``ext.ts`` for pi)."""

    def __init__(self, played: Played) -> None:
        models = json.loads((played.workspace.agent_dir / "models.json").read_text())
        llm_url = models["providers"]["fake"]["baseUrl"].removesuffix("/v1")
        # Normaliser reads only a side's root and LLM url; a played scenario has both.
        side = SimpleNamespace(root=played.workspace.root, server=SimpleNamespace(url=llm_url))
        super().__init__(cast("Side", side))

    def text(self, value: str) -> str:
        return super().text(_WALL_TIME.sub('"wall_time_seconds":0', _EXT_PATH.sub("<EXT>", value)))

    def value(self, value: Any, key: str | None = None) -> Any:
        return 0 if key == "wall_time_seconds" else super().value(value, key)


def comparable(played: Played) -> tuple[list[Any], list[Any]]:
    """Normalised records and the non-system messages of each LLM request."""
    norm = ExtensionNormaliser(played)
    records = norm.value([_without_builtin_commands(r) for r in _update_kinds(played.records)])
    return records, norm.value(bodies(played.requests))


async def assert_parity(parity: Parity, root: Path, name: str | None = None) -> Played:
    """Both sides' records compared; with ``name`` (a scenario of ``SCENARIOS``), runs already played
    in this process are reused."""
    if name is None:
        reference, ours = await play_side("reference", parity, root), await play_side("ours", parity, root)
    else:
        reference, ours = await play_named("reference", name, root), await play_named("ours", name, root)
    our_records, our_requests = comparable(ours)
    their_records, their_requests = comparable(reference)
    assert [r["type"] for r in our_records] == [r["type"] for r in their_records], ours.stderr[-3000:]
    found = differences(our_records, their_records, "records") + differences(our_requests, their_requests, "requests")
    assert not found, "\n".join(found)
    return ours


# --------------------------------------------------------------------------- conversation helpers


async def answer(conv: Conversation, method: str, **reply: Any) -> Record:
    """Read up to the next ``extension_ui_request`` (it must be ``method``) and answer it with ``reply``."""
    records = await conv.read_until(lambda r: r["type"] == "extension_ui_request" and r["method"] in DIALOGS)
    request = records[-1]
    assert request["method"] == method
    if reply:
        await conv.proc.send({"type": "extension_ui_response", "id": request["id"], **reply})
    return request


DIALOGS = ("select", "confirm", "input", "editor")


def text_reply(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "usage": {"input": 10, "output": 5, "cacheRead": 0,
                                                                   "cacheWrite": 0}}


def ui_requests(records: list[Record]) -> list[Record]:
    return [{k: v for k, v in r.items() if k not in ("type", "id")} for r in only(records, "extension_ui_request")]




def response(records: list[Record], command: str) -> Record:
    return next(r for r in records if r["type"] == "response" and r["command"] == command)


def messages(records: list[Record], role: str) -> list[dict[str, Any]]:
    return [r["message"] for r in records if r["type"] == "message_end" and r["message"]["role"] == role]


def notes(records: list[Record]) -> list[str]:
    return [r["message"] for r in only(records, "extension_ui_request") if r["method"] == "notify"]


def tool_call(*calls: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    return {"content": [{"type": "toolCall", "id": call_id, "name": name, "arguments": args}
                        for call_id, name, args in calls]}


SCENARIOS: dict[str, Parity] = {}

# --------------------------------------------------------------------------- dialogs


DIALOGS_TS = """
export default function (pi) {
  pi.registerCommand("ask", {
    description: "Four dialogs",
    handler: async (args, ctx) => {
      const choice = await ctx.ui.select("Pick one", ["A", "B"], { timeout: 60000 });
      const sure = await ctx.ui.confirm("Sure?", `Picked ${choice}`);
      const name = await ctx.ui.input("Name?", "your name");
      const text = await ctx.ui.editor("Edit", "line 1\\nline 2");
      ctx.ui.notify(`${args}|${choice}|${sure}|${name}|${text}`, "info");
    },
  });
}
"""

DIALOGS_PY = """
async def setup(pi):
    async def ask(args, ctx):
        choice = await ctx.ui.select("Pick one", ["A", "B"], timeout_ms=60000)
        sure = await ctx.ui.confirm("Sure?", f"Picked {js(choice)}")
        name = await ctx.ui.input("Name?", "your name")
        text = await ctx.ui.editor("Edit", "line 1\\nline 2")
        ctx.ui.notify(f"{args}|{js(choice)}|{js(sure)}|{js(name)}|{js(text)}", "info")

    pi.register_command("ask", description="Four dialogs", handler=ask)
"""


async def _dialogs_answered(conv: Conversation) -> None:
    command_id = await conv.send({"type": "prompt", "message": "/ask some args"})
    await answer(conv, "select", value="B")
    await answer(conv, "confirm", confirmed=True)
    await answer(conv, "input", value="Ada")
    await answer(conv, "editor", value="edited")
    await conv.response(command_id)


def _check_dialogs_answered(records: list[Record], requests: list[dict[str, Any]]) -> None:
    assert [r["method"] for r in only(records, "extension_ui_request")] == [*DIALOGS, "notify"]
    assert ui_requests(records)[:4] == [
        {"method": "select", "title": "Pick one", "options": ["A", "B"], "timeout": 60000},
        {"method": "confirm", "title": "Sure?", "message": "Picked B"},
        {"method": "input", "title": "Name?", "placeholder": "your name"},
        {"method": "editor", "title": "Edit", "prefill": "line 1\nline 2"}]
    assert notes(records) == ["some args|B|true|Ada|edited"]
    assert records[-1]["type"] == "response" and records[-1]["data"] == {"disposition": "handled"}
    assert requests == []


async def _dialogs_cancelled(conv: Conversation) -> None:
    command_id = await conv.send({"type": "prompt", "message": "/ask"})
    for method in DIALOGS:
        await answer(conv, method, cancelled=True)
    await conv.response(command_id)


def _check_dialogs_cancelled(records: list[Record], requests: list[dict[str, Any]]) -> None:
    assert notes(records) == ["|undefined|false|undefined|undefined"]
    assert ui_requests(records)[1]["message"] == "Picked undefined"


SCENARIOS["dialogs_answered"] = Parity(DIALOGS_TS, DIALOGS_PY, _dialogs_answered, _check_dialogs_answered)
SCENARIOS["dialogs_cancelled"] = Parity(DIALOGS_TS, DIALOGS_PY, _dialogs_cancelled, _check_dialogs_cancelled)

# --------------------------------------------------------------------------- dialog timeouts

TIMEOUTS_TS = """
export default function (pi) {
  pi.registerCommand("wait", {
    handler: async (args, ctx) => {
      const choice = await ctx.ui.select("Too slow", ["A"], { timeout: 50 });
      const sure = await ctx.ui.confirm("Still there?", "No answer expected", { timeout: 50 });
      const name = await ctx.ui.input("Anyone?", undefined, { timeout: 50 });
      ctx.ui.notify(`${choice}|${sure}|${name}`);
    },
  });
}
"""

TIMEOUTS_PY = """
def setup(pi):
    async def wait(args, ctx):
        choice = await ctx.ui.select("Too slow", ["A"], timeout_ms=50)
        sure = await ctx.ui.confirm("Still there?", "No answer expected", timeout_ms=50)
        name = await ctx.ui.input("Anyone?", timeout_ms=50)
        ctx.ui.notify(f"{js(choice)}|{js(sure)}|{js(name)}")

    pi.register_command("wait", handler=wait)
"""


async def _timeouts(conv: Conversation) -> None:
    records = await conv.response(await conv.send({"type": "prompt", "message": "/wait"}))
    assert records["success"]
    first = only(conv.records, "extension_ui_request")[0]
    await conv.proc.send({"type": "extension_ui_response", "id": first["id"], "value": "A"})  # too late: ignored
    await conv.request({"type": "get_state"})


def _check_timeouts(records: list[Record], requests: list[dict[str, Any]]) -> None:
    assert ui_requests(records) == [
        {"method": "select", "title": "Too slow", "options": ["A"], "timeout": 50},
        {"method": "confirm", "title": "Still there?", "message": "No answer expected", "timeout": 50},
        {"method": "input", "title": "Anyone?", "timeout": 50},
        {"method": "notify", "message": "undefined|false|undefined"}]
    assert [r["type"] for r in records[-2:]] == ["response", "response"]


SCENARIOS["dialog_timeouts"] = Parity(TIMEOUTS_TS, TIMEOUTS_PY, _timeouts, _check_timeouts)

# --------------------------------------------------------------------------- fire and forget

FIRE_TS = """
export default function (pi) {
  pi.registerCommand("ui", {
    handler: async (args, ctx) => {
      ctx.ui.notify("plain");
      ctx.ui.notify("careful", "warning");
      ctx.ui.setStatus("job", "busy");
      ctx.ui.setStatus("job", undefined);
      ctx.ui.setWidget("list", ["l1", "l2"], { placement: "belowEditor" });
      ctx.ui.setWidget("other", ["x"]);
      ctx.ui.setWidget("list", undefined);
      ctx.ui.setTitle("My title");
      ctx.ui.setEditorText("draft");
      ctx.ui.pasteToEditor("pasted");
      ctx.ui.notify(`${ctx.mode}|${ctx.hasUI}|${JSON.stringify(ctx.ui.getEditorText())}`, "error");
    },
  });
}
"""

FIRE_PY = """
def setup(pi):
    def ui(args, ctx):
        ctx.ui.notify("plain")
        ctx.ui.notify("careful", "warning")
        ctx.ui.set_status("job", "busy")
        ctx.ui.set_status("job", None)
        ctx.ui.set_widget("list", ["l1", "l2"], placement="belowEditor")
        ctx.ui.set_widget("other", ["x"])
        ctx.ui.set_widget("list", None)
        ctx.ui.set_title("My title")
        ctx.ui.set_editor_text("draft")
        ctx.ui.paste_to_editor("pasted")
        ctx.ui.notify(f"{ctx.mode}|{js(ctx.has_ui)}|{stringify(ctx.ui.get_editor_text())}", "error")

    pi.register_command("ui", handler=ui)
"""


async def _fire_and_forget(conv: Conversation) -> None:
    await conv.request({"type": "prompt", "message": "/ui"})


def _check_fire_and_forget(records: list[Record], requests: list[dict[str, Any]]) -> None:
    assert ui_requests(records) == [
        {"method": "notify", "message": "plain"},
        {"method": "notify", "message": "careful", "notifyType": "warning"},
        {"method": "setStatus", "statusKey": "job", "statusText": "busy"},
        {"method": "setStatus", "statusKey": "job"},
        {"method": "setWidget", "widgetKey": "list", "widgetLines": ["l1", "l2"], "widgetPlacement": "belowEditor"},
        {"method": "setWidget", "widgetKey": "other", "widgetLines": ["x"]},
        {"method": "setWidget", "widgetKey": "list"},
        {"method": "setTitle", "title": "My title"},
        {"method": "set_editor_text", "text": "draft"},
        {"method": "set_editor_text", "text": "pasted"},
        {"method": "notify", "message": 'rpc|true|""', "notifyType": "error"}]
    assert len({r["id"] for r in only(records, "extension_ui_request")}) == 11


SCENARIOS["fire_and_forget"] = Parity(FIRE_TS, FIRE_PY, _fire_and_forget, _check_fire_and_forget)

# --------------------------------------------------------------------------- tool_call gate

GATE_TS = """
export default function (pi) {
  pi.on("tool_call", async (event, ctx) => {
    ctx.ui.notify(JSON.stringify(event));
    if (event.input.command.includes("rm ")) return { block: true, reason: "rm is not allowed" };
    if (event.input.command.includes("sudo")) return { block: true };
    if (event.input.command.includes("boom")) throw new Error("gate exploded");
    event.input.command = "echo patched";
  });
}
"""

GATE_PY = """
def setup(pi):
    def gate(event, ctx):
        ctx.ui.notify(stringify(event))
        command = event["input"]["command"]
        if "rm " in command:
            return {"block": True, "reason": "rm is not allowed"}
        if "sudo" in command:
            return {"block": True}
        if "boom" in command:
            raise RuntimeError("gate exploded")
        event["input"]["command"] = "echo patched"

    pi.on("tool_call", gate)
"""


async def _prompt(conv: Conversation, text: str = "go") -> None:
    await conv.prompt(text)


def _check_gate(records: list[Record], requests: list[dict[str, Any]]) -> None:
    results = {m["toolCallId"]: m for m in messages(records, "toolResult")}
    assert results["call_1"]["isError"] and results["call_1"]["content"] == [{"type": "text", "text": "rm is not allowed"}]
    assert results["call_2"]["content"] == [{"type": "text", "text": "Tool execution was blocked"}]
    assert results["call_3"]["content"] == [{"type": "text", "text": "gate exploded"}]  # no extension_error
    assert not results["call_4"]["isError"] and results["call_4"]["content"][0]["text"].strip() == "patched"
    assert only(records, "extension_error") == []
    assert json.loads(notes(records)[0]) == {"type": "tool_call", "toolCallId": "call_1", "toolName": "bash",
                                             "input": {"command": "rm -rf build"}}
    assert len(requests) == 2


SCENARIOS["tool_call_gate"] = Parity(GATE_TS, GATE_PY, _prompt, _check_gate, script=[
    tool_call(("call_1", "bash", {"command": "rm -rf build"}), ("call_2", "bash", {"command": "sudo ls"}),
              ("call_3", "bash", {"command": "boom"}), ("call_4", "bash", {"command": "echo original"})),
    text_reply("done")])

# --------------------------------------------------------------------------- tool_result patch

PATCH_TS = """
export default function (pi) {
  pi.on("tool_result", async (event, ctx) => {
    ctx.ui.notify(JSON.stringify(event));
    return { content: [{ type: "text", text: "patched: " + event.content[0].text }], details: { patched: true },
             isError: true };
  });
  pi.on("tool_result", async (event) => {
    return { content: [...event.content, { type: "text", text: "second" }] };
  });
}
"""

PATCH_PY = """
def setup(pi):
    def first(event, ctx):
        ctx.ui.notify(stringify(event))
        return {"content": [{"type": "text", "text": "patched: " + event["content"][0]["text"]}],
                "details": {"patched": True}, "isError": True}

    def second(event, ctx):
        return {"content": [*event["content"], {"type": "text", "text": "second"}]}

    pi.on("tool_result", first)
    pi.on("tool_result", second)
"""


def _check_patch(records: list[Record], requests: list[dict[str, Any]]) -> None:
    result = messages(records, "toolResult")[0]
    assert result["content"] == [{"type": "text", "text": "patched: hi\n"}, {"type": "text", "text": "second"}]
    assert result["details"] == {"patched": True} and result["isError"] is True
    end = only(records, "tool_execution_end")[0]
    assert end["isError"] is True and end["result"]["content"] == result["content"]


SCENARIOS["tool_result_patch"] = Parity(PATCH_TS, PATCH_PY, _prompt, _check_patch, script=[
    tool_call(("call_1", "bash", {"command": "echo hi"})), text_reply("done")])

# --------------------------------------------------------------------------- input transform / handled

INPUT_TS = """
export default function (pi) {
  pi.on("input", async (event, ctx) => {
    ctx.ui.notify(JSON.stringify(event));
    if (event.text === "ping") return { action: "handled" };
    if (event.text.startsWith("?q ")) return { action: "transform", text: "Briefly: " + event.text.slice(3) };
    return { action: "continue" };
  });
  pi.on("input", async (event) => {
    if (event.text.startsWith("Briefly: ")) return { action: "transform", text: event.text + " (chained)" };
  });
}
"""

INPUT_PY = """
def setup(pi):
    def first(event, ctx):
        ctx.ui.notify(stringify(event))
        if event["text"] == "ping":
            return {"action": "handled"}
        if event["text"].startswith("?q "):
            return {"action": "transform", "text": "Briefly: " + event["text"][3:]}
        return {"action": "continue"}

    def second(event, ctx):
        if event["text"].startswith("Briefly: "):
            return {"action": "transform", "text": event["text"] + " (chained)"}

    pi.on("input", first)
    pi.on("input", second)
"""


async def _input(conv: Conversation) -> None:
    await conv.request({"type": "prompt", "message": "ping"})
    await conv.prompt("?q why")


def _check_input(records: list[Record], requests: list[dict[str, Any]]) -> None:
    assert response(records, "prompt")["data"] == {"disposition": "handled"}
    assert [json.loads(n) for n in notes(records)] == [{"type": "input", "text": "ping", "source": "rpc"},
                                                       {"type": "input", "text": "?q why", "source": "rpc"}]
    assert bodies(requests)[0][-1]["content"] in ("Briefly: why (chained)",
                                                  [{"type": "text", "text": "Briefly: why (chained)"}])


SCENARIOS["input_transform_handled"] = Parity(INPUT_TS, INPUT_PY, _input, _check_input, script=[text_reply("fine")])

# --------------------------------------------------------------------------- before_agent_start

BEFORE_TS = """
export default function (pi) {
  pi.on("before_agent_start", async (event, ctx) => {
    ctx.ui.notify(`${event.messageType}|${event.prompt}|${typeof event.systemPrompt}`);
    return { message: { customType: "ctx-inject", content: "Injected context", display: true, details: { n: 1 } } };
  });
}
"""

BEFORE_PY = """
def setup(pi):
    def inject(event, ctx):
        ctx.ui.notify(f"{event['messageType']}|{event['prompt']}|{'string' if isinstance(event['systemPrompt'], str) else ''}")
        return {"message": {"customType": "ctx-inject", "content": "Injected context", "display": True,
                            "details": {"n": 1}}}

    pi.on("before_agent_start", inject)
"""


def _check_before(records: list[Record], requests: list[dict[str, Any]]) -> None:
    assert notes(records) == ["user|hello|string"]
    custom = messages(records, "custom")
    assert [(m["customType"], m["content"], m["display"], m["details"]) for m in custom] == [
        ("ctx-inject", "Injected context", True, {"n": 1})]
    starts = [r["message"]["role"] for r in only(records, "message_start") if r["message"]["role"] != "system"]
    assert starts == ["user", "custom", "assistant"]
    sent = bodies(requests)[0]
    assert [m["role"] for m in sent] == ["user", "user"]
    assert "Injected context" in json.dumps(sent[1])


SCENARIOS["before_agent_start_inject"] = Parity(BEFORE_TS, BEFORE_PY, lambda conv: _prompt(conv, "hello"),
                                                _check_before, script=[text_reply("noted")])

# --------------------------------------------------------------------------- extension tool

TOOL_TS = """
export default function (pi) {
  pi.registerTool({
    name: "greet",
    label: "Greet",
    description: "Greet someone by name",
    parameters: { type: "object", properties: { name: { type: "string", description: "Who" } }, required: ["name"] },
    async execute(toolCallId, params, signal, onUpdate, ctx) {
      onUpdate({ content: [{ type: "text", text: "working" }], details: { step: 1 } });
      return { content: [{ type: "text", text: `Hello, ${params.name}!` }], details: { greeted: params.name } };
    },
  });
}
"""

TOOL_PY = """
def setup(pi):
    async def greet(tool_call_id, params, signal, on_update, ctx):
        on_update({"content": [{"type": "text", "text": "working"}], "details": {"step": 1}})
        return {"content": [{"type": "text", "text": f"Hello, {params['name']}!"}], "details": {"greeted": params["name"]}}

    pi.register_tool(name="greet", label="Greet", description="Greet someone by name", execute=greet,
                     parameters={"type": "object", "properties": {"name": {"type": "string", "description": "Who"}},
                                 "required": ["name"]})
"""


def _check_tool(records: list[Record], requests: list[dict[str, Any]]) -> None:
    result = messages(records, "toolResult")[0]
    assert result["toolName"] == "greet" and result["content"] == [{"type": "text", "text": "Hello, Ada!"}]
    assert result["details"] == {"greeted": "Ada"}
    update = only(records, "tool_execution_update")[0]
    assert update["partialResult"] == {"content": [{"type": "text", "text": "working"}], "details": {"step": 1}}
    tools = [t["function"] for t in requests[0]["body"]["tools"] if t["function"]["name"] == "greet"]
    assert tools == [{"name": "greet", "description": "Greet someone by name", "parameters": {
        "type": "object", "properties": {"name": {"type": "string", "description": "Who"}}, "required": ["name"]}}]


SCENARIOS["extension_tool"] = Parity(TOOL_TS, TOOL_PY, _prompt, _check_tool, script=[
    tool_call(("call_1", "greet", {"name": "Ada"})), text_reply("greeted")])

# --------------------------------------------------------------------------- send_message

SEND_TS = """
export default function (pi) {
  pi.registerCommand("note", {
    handler: async () => { pi.sendMessage({ customType: "note", content: "Just noted", display: true }); },
  });
  pi.registerCommand("nudge", {
    handler: async () => {
      pi.sendMessage({ customType: "nudge", content: "Remember X", display: true, details: { k: 1 } },
                     { triggerTurn: true });
    },
  });
  pi.registerTool({
    name: "later",
    label: "Later",
    description: "Queue a follow-up note",
    parameters: { type: "object", properties: {} },
    async execute() {
      pi.sendMessage({ customType: "follow", content: "Follow-up note", display: false }, { deliverAs: "followUp" });
      return { content: [{ type: "text", text: "queued" }], details: {} };
    },
  });
}
"""

SEND_PY = """
def setup(pi):
    async def note(args, ctx):
        await pi.send_message({"customType": "note", "content": "Just noted", "display": True})

    async def nudge(args, ctx):
        await pi.send_message({"customType": "nudge", "content": "Remember X", "display": True, "details": {"k": 1}},
                              trigger_turn=True)

    async def later(tool_call_id, params, signal, on_update, ctx):
        await pi.send_message({"customType": "follow", "content": "Follow-up note", "display": False},
                              deliver_as="followUp")
        return {"content": [{"type": "text", "text": "queued"}], "details": {}}

    pi.register_command("note", handler=note)
    pi.register_command("nudge", handler=nudge)
    pi.register_tool(name="later", label="Later", description="Queue a follow-up note", execute=later,
                     parameters={"type": "object", "properties": {}})
"""


async def _send(conv: Conversation) -> None:
    await conv.request({"type": "prompt", "message": "/note"})
    await conv.send({"type": "prompt", "message": "/nudge"})
    await conv.read_until(lambda r: r["type"] == "agent_settled")
    await conv.prompt("use the tool")


def _check_send(records: list[Record], requests: list[dict[str, Any]]) -> None:
    custom = [(m["customType"], m["content"]) for m in messages(records, "custom")]
    assert custom == [("note", "Just noted"), ("nudge", "Remember X"), ("follow", "Follow-up note")]
    assert len(requests) == 4
    assert "Follow-up note" in json.dumps(bodies(requests)[3][-1])


SCENARIOS["send_message"] = Parity(SEND_TS, SEND_PY, _send, _check_send, script=[
    text_reply("nudged"), tool_call(("call_1", "later", {})), text_reply("tool done"), text_reply("saw the note")])

STREAMING_SEND_TS = """
export default function (pi) {
  pi.registerTool({
    name: "notes",
    label: "Notes",
    description: "Send notes while the run streams",
    parameters: { type: "object", properties: {} },
    async execute() {
      pi.sendMessage({ customType: "aside", content: "Context only", display: true }, { triggerTurn: false });
      pi.sendMessage({ customType: "steered", content: "Steered note", display: true });
      return { content: [{ type: "text", text: "sent" }], details: {} };
    },
  });
}
"""

STREAMING_SEND_PY = """
def setup(pi):
    async def notes(tool_call_id, params, signal, on_update, ctx):
        await pi.send_message({"customType": "aside", "content": "Context only", "display": True}, trigger_turn=False)
        await pi.send_message({"customType": "steered", "content": "Steered note", "display": True})
        return {"content": [{"type": "text", "text": "sent"}], "details": {}}

    pi.register_tool(name="notes", label="Notes", description="Send notes while the run streams", execute=notes,
                     parameters={"type": "object", "properties": {}})
"""


def _check_streaming_send(records: list[Record], requests: list[dict[str, Any]]) -> None:
    flow = [(r["type"], r["message"].get("customType", r["message"]["role"])) for r in records
            if r["type"] in ("message_end", "turn_end") and r["message"]["role"] != "system"]
    assert flow == [("message_end", "user"), ("message_end", "assistant"), ("message_end", "toolResult"),
                    ("turn_end", "assistant"), ("message_end", "aside"), ("message_end", "steered"),
                    ("message_end", "assistant"), ("turn_end", "assistant")]
    second = [json.dumps(m) for m in bodies(requests)[1]]
    assert "Context only" in second[-2] and "Steered note" in second[-1]  # both reach the next request


SCENARIOS["send_message_while_streaming"] = Parity(STREAMING_SEND_TS, STREAMING_SEND_PY, _prompt,
                                                   _check_streaming_send, script=[
    tool_call(("call_1", "notes", {})), text_reply("noted both")])

# --------------------------------------------------------------------------- append_entry

APPEND_TS = """
export default function (pi) {
  pi.registerCommand("mark", {
    handler: async () => {
      pi.appendEntry("marker", { count: 1 });
      pi.appendEntry("bare");
    },
  });
}
"""

APPEND_PY = """
def setup(pi):
    def mark(args, ctx):
        pi.append_entry("marker", {"count": 1})
        pi.append_entry("bare")

    pi.register_command("mark", handler=mark)
"""


async def _append(conv: Conversation) -> None:
    await conv.prompt("hello")
    await conv.request({"type": "prompt", "message": "/mark"})
    await conv.request({"type": "get_messages"})


def _check_append(records: list[Record], requests: list[dict[str, Any]]) -> None:
    entries = [r["entry"] for r in only(records, "entry_appended")]
    assert [(e["type"], e["customType"], e.get("data")) for e in entries] == [
        ("custom", "marker", {"count": 1}), ("custom", "bare", None)]
    assert entries[1]["parentId"] == entries[0]["id"]


SCENARIOS["append_entry"] = Parity(APPEND_TS, APPEND_PY, _append, _check_append, script=[text_reply("hi")])

# --------------------------------------------------------------------------- session_before_switch

SWITCH_TS = """
export default function (pi) {
  pi.on("session_before_switch", async (event, ctx) => {
    ctx.ui.notify(JSON.stringify(event));
    return { cancel: true };
  });
}
"""

SWITCH_PY = """
def setup(pi):
    def refuse(event, ctx):
        ctx.ui.notify(stringify(event))
        return {"cancel": True}

    pi.on("session_before_switch", refuse)
"""


async def _switch(conv: Conversation) -> None:
    await conv.request({"type": "new_session"})


def _check_switch(records: list[Record], requests: list[dict[str, Any]]) -> None:
    assert response(records, "new_session")["data"] == {"cancelled": True}
    assert json.loads(notes(records)[0]) == {"type": "session_before_switch", "reason": "new"}


SCENARIOS["session_before_switch_cancel"] = Parity(SWITCH_TS, SWITCH_PY, _switch, _check_switch)

# --------------------------------------------------------------------------- errors

ERRORS_TS = """
export default function (pi) {
  pi.on("turn_start", async () => { throw new Error("turn boom"); });
  pi.on("agent_end", () => { throw new TypeError("end boom"); });
  pi.registerCommand("fail", { handler: async () => { throw new Error("command boom"); } });
}
"""

ERRORS_PY = """
def setup(pi):
    async def turn_start(event, ctx):
        raise RuntimeError("turn boom")

    def agent_end(event, ctx):
        raise TypeError("end boom")

    async def fail(args, ctx):
        raise RuntimeError("command boom")

    pi.on("turn_start", turn_start)
    pi.on("agent_end", agent_end)
    pi.register_command("fail", handler=fail)
"""


async def _errors(conv: Conversation) -> None:
    await conv.request({"type": "prompt", "message": "/fail"})
    await conv.prompt("hello")


def _check_errors(records: list[Record], requests: list[dict[str, Any]]) -> None:
    errors = [{k: v for k, v in r.items() if k != "extensionPath"} for r in only(records, "extension_error")]
    assert errors == [{"type": "extension_error", "event": "command", "error": "command boom"},
                      {"type": "extension_error", "event": "turn_start", "error": "turn boom"},
                      {"type": "extension_error", "event": "agent_end", "error": "end boom"}]
    assert only(records, "extension_error")[0]["extensionPath"] == "command:fail"
    assert response(records, "prompt")["data"] == {"disposition": "handled"}
    assert records[-1]["type"] == "agent_settled"


SCENARIOS["throwing_handlers"] = Parity(ERRORS_TS, ERRORS_PY, _errors, _check_errors, script=[text_reply("hi")])

# --------------------------------------------------------------------------- get_commands

COMMANDS_TS = """
export default function (pi) {
  pi.on("session_start", async (event, ctx) => { ctx.ui.notify(JSON.stringify(event)); });
  pi.registerCommand("deploy", { description: "Deploy the app", handler: async () => {} });
  pi.registerCommand("dup", { description: "First", handler: async (args, ctx) => ctx.ui.notify("first " + args) });
  pi.registerCommand("dup", { handler: async (args, ctx) => ctx.ui.notify("second " + args) });
  pi.registerCommand("list", {
    handler: async (args, ctx) => ctx.ui.notify(JSON.stringify(
      pi.getCommands().filter((c) => c.sourceInfo.source !== "builtin").map((c) => c.name))),
  });
}
"""

COMMANDS_PY = """
def setup(pi):
    pi.on("session_start", lambda event, ctx: ctx.ui.notify(stringify(event)))
    pi.register_command("deploy", description="Deploy the app", handler=lambda args, ctx: None)
    pi.register_command("dup", description="First", handler=lambda args, ctx: ctx.ui.notify("first " + args))
    pi.register_command("dup", handler=lambda args, ctx: ctx.ui.notify("second " + args))
    pi.register_command("list", handler=lambda args, ctx: ctx.ui.notify(
        stringify([c["name"] for c in pi.get_commands() if c["sourceInfo"].get("source") != "builtin"])))
"""


async def _commands(conv: Conversation) -> None:
    await conv.request({"type": "get_commands"})
    await conv.request({"type": "prompt", "message": "/dup x"})
    await conv.prompt("/dup:2 x")  # no such command: a plain prompt
    await conv.request({"type": "prompt", "message": "/list"})


def _check_commands(records: list[Record], requests: list[dict[str, Any]]) -> None:
    commands = [c for c in response(records, "get_commands")["data"]["commands"]
                if c["sourceInfo"].get("source") != "builtin"]  # not the built-in /mcp
    assert [(c["name"], c.get("description"), c["source"]) for c in commands] == [
        ("deploy", "Deploy the app", "extension"), ("dup", None, "extension"), ("list", None, "extension")]
    assert {k: v for k, v in commands[0]["sourceInfo"].items() if k != "path"} == {
        "source": "cli", "scope": "temporary", "origin": "top-level"}
    assert notes(records) == ['{"type":"session_start","reason":"startup"}', "second x", '["deploy","dup","list"]']
    assert bodies(requests) == [[{"role": "user", "content": [{"type": "text", "text": "/dup:2 x"}]}]]


SCENARIOS["get_commands"] = Parity(COMMANDS_TS, COMMANDS_PY, _commands, _check_commands, script=[text_reply("ok")])

# --------------------------------------------------------------------------- run event payloads and order

RUN_EVENTS = ("agent_start", "turn_start", "message_start", "message_end", "tool_execution_start",
              "tool_execution_update", "tool_execution_end", "turn_end", "agent_end", "agent_settled")

EVENTS_TS = """
export default function (pi) {
  for (const name of RUN_EVENTS) {
    pi.on(name, async (event, ctx) => {
      const role = event.message ? ":" + event.message.role : "";
      ctx.ui.notify(`${event.type}${role}|${Object.keys(event).join(",")}|${ctx.isIdle()}`);
    });
  }
}
""".replace("RUN_EVENTS", json.dumps(list(RUN_EVENTS)))

EVENTS_PY = """
def setup(pi):
    def report(event, ctx):
        role = ":" + event["message"]["role"] if "message" in event else ""
        ctx.ui.notify(f"{event['type']}{role}|{','.join(event)}|{js(ctx.is_idle())}")

    for name in RUN_EVENTS:
        pi.on(name, report)
""".replace("RUN_EVENTS", json.dumps(list(RUN_EVENTS)))


def _check_events(records: list[Record], requests: list[dict[str, Any]]) -> None:
    reported = [n.split("|")[0] for n in notes(records)]
    assert reported[0] == "agent_start" and reported[-1] == "agent_settled"
    assert ("turn_end:assistant|type,turnIndex,message,toolResults,messageEntryId,toolResultEntryIds,outcome,"
            "entries,continue,context|false") in notes(records)
    assert "agent_settled|type,aborted|true" in notes(records)
    kinds = [r["type"] for r in records if r["type"] != "message_update"]
    for index, record in enumerate(kinds):  # each handler's report comes just before its record
        if record in RUN_EVENTS:
            assert kinds[index - 1] == "extension_ui_request", (index, record)


SCENARIOS["run_event_payloads"] = Parity(EVENTS_TS, EVENTS_PY, _prompt, _check_events, script=[
    tool_call(("call_1", "bash", {"command": "echo hi"})), text_reply("done")])

# --------------------------------------------------------------------------- a dialog inside a run

PERMISSION_TS = """
export default function (pi) {
  pi.on("tool_call", async (event, ctx) => {
    const ok = await ctx.ui.confirm("Allow?", event.input.command, { timeout: 60000 });
    if (!ok) return { block: true, reason: "Refused by the user" };
  });
}
"""

PERMISSION_PY = """
def setup(pi):
    async def gate(event, ctx):
        if not await ctx.ui.confirm("Allow?", event["input"]["command"], timeout_ms=60000):
            return {"block": True, "reason": "Refused by the user"}

    pi.on("tool_call", gate)
"""


async def _permission(conv: Conversation) -> None:
    await conv.send({"type": "prompt", "message": "go"})
    await answer(conv, "confirm", confirmed=False)
    await answer(conv, "confirm", confirmed=True)
    await conv.read_until(lambda r: r["type"] == "agent_settled")


def _check_permission(records: list[Record], requests: list[dict[str, Any]]) -> None:
    assert [r["message"] for r in only(records, "extension_ui_request")] == ["rm -rf gone", "echo fine"]
    results = messages(records, "toolResult")
    assert results[0]["content"] == [{"type": "text", "text": "Refused by the user"}]
    assert results[1]["content"][0]["text"] == "fine\n"


SCENARIOS["dialog_in_tool_call"] = Parity(PERMISSION_TS, PERMISSION_PY, _permission, _check_permission, script=[
    tool_call(("call_1", "bash", {"command": "rm -rf gone"})), tool_call(("call_2", "bash", {"command": "echo fine"})),
    text_reply("done")])

# --------------------------------------------------------------------------- turn_end boundary

BOUNDARY_TS = """
export default function (pi) {
  pi.on("turn_end", async (event, ctx) => {
    const c = event.context;
    ctx.ui.notify([event.turnIndex, event.outcome, event.entries.length, event.continue, c.canContinue,
                   c.llmMessages.length, c.contextMessages.length, c.contextEntries.length,
                   c.pendingMessages.length].join("|"));
    if (event.turnIndex === 0) {
      return { entries: [{ type: "custom_message", customType: "nudge", content: "keep going", display: false },
                         { type: "custom", customType: "mark", data: { turn: 0 } }], continue: true };
    }
  });
  pi.on("turn_end", async (event, ctx) => {
    ctx.ui.notify(`second|${event.entries.length}|${event.continue}|${event.context.canContinue}`);
  });
}
"""

BOUNDARY_PY = """
def setup(pi):
    def propose(event, ctx):
        c = event["context"]
        ctx.ui.notify("|".join(js(v) for v in (
            event["turnIndex"], event["outcome"], len(event["entries"]), event["continue"], c["canContinue"],
            len(c["llmMessages"]), len(c["contextMessages"]), len(c["contextEntries"]), len(c["pendingMessages"]))))
        if event["turnIndex"] == 0:
            return {"entries": [{"type": "custom_message", "customType": "nudge", "content": "keep going",
                                 "display": False},
                                {"type": "custom", "customType": "mark", "data": {"turn": 0}}], "continue": True}

    def second(event, ctx):
        ctx.ui.notify(f"second|{len(event['entries'])}|{js(event['continue'])}|{js(event['context']['canContinue'])}")

    pi.on("turn_end", propose)
    pi.on("turn_end", second)
"""


def _check_boundary(records: list[Record], requests: list[dict[str, Any]]) -> None:
    assert [n.split("|")[:5] for n in notes(records) if not n.startswith("second")] == [
        ["0", "completed", "0", "false", "false"], ["1", "completed", "0", "false", "false"]]
    assert [n for n in notes(records) if n.startswith("second")] == ["second|2|true|true", "second|0|false|false"]
    assert [r["entry"]["type"] for r in only(records, "entry_appended")] == ["custom_message", "custom"]
    assert len(requests) == 2 and bodies(requests)[1][-1]["content"] in (
        "keep going", [{"type": "text", "text": "keep going"}])


SCENARIOS["turn_end_boundary"] = Parity(BOUNDARY_TS, BOUNDARY_PY, _prompt, _check_boundary,
                                        script=[text_reply("first"), text_reply("second")])

# --------------------------------------------------------------------------- agent_before_settle

SETTLE_TS = """
let calls = 0;
export default function (pi) {
  pi.on("agent_before_settle", async (event, ctx) => {
    calls++;
    ctx.ui.notify(`${Object.keys(event).join(",")}|${event.outcome}|${calls}|${event.context.canContinue}`);
    if (calls === 1) {
      return { entries: [{ type: "custom_message", customType: "check", content: "verify", display: true }],
               continue: true };
    }
    if (calls === 2) return { continue: true };
  });
  pi.on("agent_settled", async (event, ctx) => ctx.ui.notify("settled"));
}
"""

SETTLE_PY = """
calls = []


def setup(pi):
    def before_settle(event, ctx):
        calls.append(1)
        ctx.ui.notify(f"{','.join(event)}|{event['outcome']}|{len(calls)}|{js(event['context']['canContinue'])}")
        if len(calls) == 1:
            return {"entries": [{"type": "custom_message", "customType": "check", "content": "verify",
                                 "display": True}], "continue": True}
        if len(calls) == 2:
            return {"continue": True}

    pi.on("agent_before_settle", before_settle)
    pi.on("agent_settled", lambda event, ctx: ctx.ui.notify("settled"))
"""


def _check_settle(records: list[Record], requests: list[dict[str, Any]]) -> None:
    assert notes(records) == ["type,outcome,entries,continue,context|completed|1|false",
                              "type,outcome,entries,continue,context|completed|2|false", "settled"]
    assert len(only(records, "agent_start")) == 2 and len(only(records, "agent_settled")) == 1
    errors = only(records, "extension_error")
    assert [e["error"] for e in errors] == ["agent_before_settle requested continuation without runnable model context"]
    assert len(requests) == 2


SCENARIOS["agent_before_settle"] = Parity(SETTLE_TS, SETTLE_PY, _prompt, _check_settle,
                                          script=[text_reply("done"), text_reply("verified")])

# --------------------------------------------------------------------------- tool_result usage

USAGE_TS = """
const USAGE = { input: 100, output: 20, cacheRead: 0, cacheWrite: 0, totalTokens: 120,
                cost: { input: 0.5, output: 0.25, cacheRead: 0, cacheWrite: 0, total: 0.75 } };
export default function (pi) {
  pi.on("tool_result", async () => ({ usage: USAGE }));
  pi.on("tool_result", async (event, ctx) => { ctx.ui.notify(JSON.stringify(event.usage)); });
}
"""

USAGE_PY = """
USAGE = {"input": 100, "output": 20, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 120,
         "cost": {"input": 0.5, "output": 0.25, "cacheRead": 0, "cacheWrite": 0, "total": 0.75}}


def setup(pi):
    pi.on("tool_result", lambda event, ctx: {"usage": USAGE})
    pi.on("tool_result", lambda event, ctx: ctx.ui.notify(stringify(event.get("usage"))))
"""


async def _usage(conv: Conversation) -> None:
    await conv.prompt("go")
    await conv.request({"type": "get_session_stats"})


def _check_usage(records: list[Record], requests: list[dict[str, Any]]) -> None:
    assert messages(records, "toolResult")[0]["usage"]["input"] == 100
    stats = response(records, "get_session_stats")["data"]
    assert stats["tokens"]["input"] == 110 and stats["tokens"]["output"] == 25  # the tool's and the reply's


SCENARIOS["tool_result_usage"] = Parity(USAGE_TS, USAGE_PY, _usage, _check_usage, script=[
    tool_call(("call_1", "bash", {"command": "echo hi"})), text_reply("done")])

# --------------------------------------------------------------------------- message_end replacement

REPLACE_TS = """
export default function (pi) {
  pi.on("message_end", async (event) => {
    const message = event.message;
    if (message.role === "assistant") {
      return { message: { ...message, content: [{ type: "text", text: "[redacted]" }] } };
    }
    if (message.role === "user") return { message: { ...message, role: "assistant" } };
  });
  pi.on("message_end", async (event, ctx) => {
    const m = event.message;
    if (m.role === "user" || m.role === "assistant") ctx.ui.notify(`${m.role}:${m.content[0].text}`);
  });
}
"""

REPLACE_PY = """
def setup(pi):
    def redact(event, ctx):
        message = event["message"]
        if message["role"] == "assistant":
            return {"message": {**message, "content": [{"type": "text", "text": "[redacted]"}]}}
        if message["role"] == "user":
            return {"message": {**message, "role": "assistant"}}

    def report(event, ctx):
        m = event["message"]
        if m["role"] in ("user", "assistant"):
            ctx.ui.notify(f"{m['role']}:{m['content'][0]['text']}")

    pi.on("message_end", redact)
    pi.on("message_end", report)
"""


async def _replace(conv: Conversation) -> None:
    await conv.prompt("hello")
    await conv.prompt("and?")
    await conv.request({"type": "get_messages"})


def _check_replace(records: list[Record], requests: list[dict[str, Any]]) -> None:
    assert notes(records) == ["user:hello", "assistant:[redacted]", "user:and?", "assistant:[redacted]"]
    assert "the secret" not in json.dumps(requests)
    assert response(records, "get_messages")["data"]["messages"][-1]["content"][0]["text"] == "[redacted]"


SCENARIOS["message_end_replace"] = Parity(REPLACE_TS, REPLACE_PY, _replace, _check_replace,
                                          script=[text_reply("the secret"), text_reply("more")])

# --------------------------------------------------------------------------- dialog signal

SIGNAL_TS = """
export default function (pi) {
  pi.registerCommand("ask", {
    handler: async (args, ctx) => {
      const controller = new AbortController();
      const pending = ctx.ui.confirm("Second", "dismissed later", { signal: controller.signal });
      const choice = await ctx.ui.select("First", ["dismiss"]);
      controller.abort();
      const dismissed = await pending;
      const gone = new AbortController();
      gone.abort();
      const skipped = await ctx.ui.input("Never asked", undefined, { signal: gone.signal });
      ctx.ui.notify(`${choice}|${dismissed}|${skipped}`);
    },
  });
}
"""

SIGNAL_PY = """
import asyncio

from pi_coding_agent.ai.abort import AbortSignal


def setup(pi):
    async def ask(args, ctx):
        signal = AbortSignal()
        pending = asyncio.ensure_future(ctx.ui.confirm("Second", "dismissed later", signal=signal))
        await asyncio.sleep(0)  # the confirm request goes out first, as in pi
        choice = await ctx.ui.select("First", ["dismiss"])
        signal.abort()
        dismissed = await pending
        gone = AbortSignal()
        gone.abort()
        skipped = await ctx.ui.input("Never asked", signal=gone)
        ctx.ui.notify(f"{choice}|{js(dismissed)}|{js(skipped)}")

    pi.register_command("ask", handler=ask)
"""


async def _signal(conv: Conversation) -> None:
    command_id = await conv.send({"type": "prompt", "message": "/ask"})
    await answer(conv, "confirm")
    await answer(conv, "select", value="dismiss")
    await conv.response(command_id)


def _check_signal(records: list[Record], requests: list[dict[str, Any]]) -> None:
    assert [r["method"] for r in only(records, "extension_ui_request")] == ["confirm", "select", "notify"]
    assert notes(records) == ["dismiss|false|undefined"]


SCENARIOS["dialog_signal"] = Parity(SIGNAL_TS, SIGNAL_PY, _signal, _check_signal)

# --------------------------------------------------------------------------- tests


@pytest.mark.parametrize("name", scenario_params(SCENARIOS))
@pytest.mark.slow
async def test_python_extension(name: str, tmp_path: Path) -> None:
    ours = await play_named("ours", name, tmp_path)
    SCENARIOS[name].check(ours.records, ours.requests)


@needs_reference
@pytest.mark.parametrize("name", scenario_params(SCENARIOS))
async def test_parity_with_typescript_extension(name: str, tmp_path: Path) -> None:
    ours = await assert_parity(SCENARIOS[name], tmp_path, name)
    SCENARIOS[name].check(ours.records, ours.requests)
