"""The same codemode scripts through ours and the reference pi 1.6.0: the result texts must match."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests.support.rpc_compare import Conversation, Record, Scenario, needs_reference, play

PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")
SCRIPTS = [
    "text('a'); text({ b: 1 }); console.log('c', 2, [3]); return null;",
    "return 42",
    "const r = await tools.bash({ command: 'printf hello; exit 3' });\nreturn r;",
    "const t = await tools.read({ path: 'notes.txt' });\ntext(t);\nawait tools.read({ path: 'missing.txt' });",
    "let = ;",
    'return 1\n// @options: {"timeout_ms": 5}',
    '// @options: {"max_output_tokens": 5, "x": 1}\nreturn 1',
    "await tools.nope({})",
    "await tools.read({})",
    "await new Promise(() => {});",
    "store('k', { v: 1 }); exit(); text('not shown');",
    "return load('k')",
    "throw new TypeError('bad ' + typeof setTimeout + ' ' + typeof require)",
    "text(ALL_TOOLS.map((t) => t.name).sort()); text((await searchTools('edit file text', { limit: 1 })).map((t) => t.name));",
    "store('big', 'x'.repeat(300000))",
    "image('https://example.com/a.png')",
    "return [await describeNamespace('x'), await models.getModelOfType('chat', 'fake', 'fake-model') !== undefined]",
    f"text('before'); image('data:image/png;base64,{PNG}'); image({{ type: 'image', data: '{PNG}', mimeType: 'x' }});",
    '// @options: {"max_output_tokens": 20}\nfor (let i = 0; i < 50; i++) text("line " + i);',
]


def _calls() -> list[dict[str, Any]]:
    script = []
    for index, code in enumerate(SCRIPTS):
        script.append({"content": [{"type": "toolCall", "id": f"cm{index}", "name": "codemode",
                                    "arguments": {"code": code}}]})
        script.append({"content": [{"type": "text", "text": "done"}]})
    return script


async def _drive(conversation: Conversation) -> None:
    (conversation.workspace.cwd / "notes.txt").write_text("milk\n")
    for _ in SCRIPTS:
        await conversation.prompt("go")


def _normal(text: str, cwd: Path) -> str:
    text = re.sub(r"Wall time \d+\.\d seconds", "Wall time N seconds", text)
    text = re.sub(r"pi-codemode-[0-9a-f]{16}", "pi-codemode-X", text)
    text = re.sub(r'"wall_time_seconds":[0-9.e-]+', '"wall_time_seconds":N', text)
    return text.replace(str(cwd), "<cwd>")


def _nested(records: list[Record], cwd: Path) -> str:
    """``nestedCalls`` of each codemode result message, without the timings, as JSON."""
    messages = [r["message"] for r in records if r["type"] == "message_end"
                and r["message"]["role"] == "toolResult" and r["message"]["toolName"] == "codemode"]
    calls = [[{k: v for k, v in c.items() if k != "durationMs"} for c in m["nestedCalls"]["calls"]]
             if "nestedCalls" in m else None for m in messages]
    return json.dumps(calls).replace(str(cwd), "<cwd>")


def _results(records: list[Record], cwd: Path) -> list[str]:
    ends = [r for r in records if r["type"] == "tool_execution_end" and r["toolName"] == "codemode"]
    return [_normal("".join(b.get("text", "") for b in r["result"]["content"]), cwd) for r in ends]


@needs_reference
async def test_result_texts_match_the_reference(tmp_path: Path) -> None:
    scenario = Scenario(script=_calls(), drive=_drive, settings={"defaultTools": ["+codemode"]})
    ours = await play("ours", scenario, tmp_path)
    reference = await play("reference", scenario, tmp_path)
    mine, theirs = _results(ours.records, ours.workspace.cwd), _results(reference.records, reference.workspace.cwd)
    assert len(mine) == len(theirs) == len(SCRIPTS)
    assert _nested(ours.records, ours.workspace.cwd) == _nested(reference.records, reference.workspace.cwd)
    for index, (a, b) in enumerate(zip(mine, theirs, strict=True)):
        assert a == b, f"script {index}: {SCRIPTS[index]!r}"


ORDER_SCRIPTS = [
    "store('k', { v: 1 }); return 1",
    "const r = await Promise.all([tools.bash({ command: 'sleep 0.3; echo a' }), "
    "tools.bash({ command: 'sleep 0.3; echo b' })]);\nreturn r.map((x) => x.output)",
]


def _order(records: list[Record]) -> list[tuple[str, str | None]]:
    """Tool executions and appended entries in arrival order; which of two concurrent inner calls ends
    first is left open (``cm1/*``)."""
    return [(r["type"], re.sub(r"/\d+$", "/*", r["toolCallId"]) if r["type"] == "tool_execution_end"
             else r.get("toolCallId") or r["entry"].get("customType")) for r in records
            if (r["type"].startswith("tool_execution_") and r["type"] != "tool_execution_update")
            or r["type"] == "entry_appended"]


@needs_reference
async def test_store_entries_and_concurrent_calls_are_ordered_as_in_the_reference(tmp_path: Path) -> None:
    """The store entry is appended (and announced) before the codemode call ends; calls a script
    awaits together run together (start, start, end, end)."""
    script = [step for index, code in enumerate(ORDER_SCRIPTS) for step in (
        {"content": [{"type": "toolCall", "id": f"cm{index}", "name": "codemode", "arguments": {"code": code}}]},
        {"content": [{"type": "text", "text": "done"}]})]

    async def drive(conversation: Conversation) -> None:
        for _ in ORDER_SCRIPTS:
            await conversation.prompt("go")

    scenario = Scenario(script=script, drive=drive, settings={"defaultTools": ["+codemode"]}, args=())
    ours = await play("ours", scenario, tmp_path)
    reference = await play("reference", scenario, tmp_path)
    assert _order(ours.records) == _order(reference.records)
    assert ("entry_appended", "codemode-store") in _order(ours.records)
