"""``ctx.modelRegistry.complete`` and ``streamSimple`` in a TypeScript extension: the session runs the
request with its own providers and credentials, and the events of a stream come back to the sidecar
(the message once, then what each event changed). ``options.signal`` aborts the request.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.reference.test_extensions_parity import Parity, bodies, notes, play_side, text_reply
from tests.support.rpc_compare import Conversation, Played, needs_reference
from tests.support.ts_runtime import needs_node, ts_runtime  # noqa: F401

pytestmark = pytest.mark.slow

MODELS_TS = """
export default function (pi) {
  pi.registerCommand("ask", { handler: async (args, ctx) => {
    const model = ctx.modelRegistry.find("fake", "fake-model");
    const asked = (text) => ({ systemPrompt: "Be brief.", messages: [{ role: "user", content: text, timestamp: 1 }] });
    const done = await ctx.modelRegistry.complete(model, asked("complete me"), { maxTokens: 77 });
    ctx.ui.notify(`complete: ${done.stopReason} ${JSON.stringify(done.content)} ${Object.keys(done).sort()}`);

    const stream = ctx.modelRegistry.streamSimple(model, asked("stream me"), { maxTokens: 55 });
    const seen = [];
    for await (const event of stream) {
      const closed = event.type === "text_end" ? JSON.stringify(event.partial.content) : "";
      seen.push(`${event.type}${event.delta ? "=" + event.delta : ""}${closed}`);
    }
    ctx.ui.notify(seen.join(" "));
    const final = await stream.result();
    ctx.ui.notify(`result: ${final.stopReason} ${JSON.stringify(final.content)}`);

    const controller = new AbortController();
    const slow = ctx.modelRegistry.streamSimple(model, asked("slow"), { signal: controller.signal });
    const kinds = [];
    for await (const event of slow) {
      kinds.push(event.type);
      if (event.type === "text_delta") controller.abort();
    }
    const stopped = await slow.result();
    ctx.ui.notify(`aborted: ${kinds.at(-1)} ${stopped.stopReason}`);

    const unknown = ctx.modelRegistry.streamSimple({ provider: "nope", id: "none", api: "openai-completions" }, asked("x"));
    const failures = [];
    for await (const event of unknown) failures.push(event.type);
    const failed = await unknown.result();
    ctx.ui.notify(`unknown: ${failures} ${failed.stopReason} ${failed.errorMessage}`);
  } });
}
"""

SLOW: dict[str, Any] = {**text_reply("one two three four five six seven eight nine ten"), "chunkSize": 4,
                        "chunkDelayMs": 150}


async def _ask(conv: Conversation) -> None:
    await conv.request({"type": "prompt", "message": "/ask"})
    while len(notes(conv.records)) < 5:
        await conv.read_until(lambda r: r["type"] == "extension_ui_request")


async def _play(kind: str, root: Path) -> Played:
    parity = Parity(MODELS_TS, "", _ask, lambda *_: None,
                    script=[text_reply("completed text"), text_reply("streamed words here"), SLOW])
    return await play_side(kind, parity, root, ".ts")


EXPECTED = [
    'complete: stop [{"type":"text","text":"completed text"}] '
    "api,content,durationMs,model,provider,rawStopReason,responseId,role,stopReason,timestamp,usage",
    "start text_start text_delta=streamed text_delta= words h text_delta=ere "
    'text_end[{"type":"text","text":"streamed words here"}] done',
    'result: stop [{"type":"text","text":"streamed words here"}]',
    "aborted: error aborted",
    "unknown: error error Unknown provider: nope",
]


@needs_node
async def test_typescript_model_calls_run_with_the_session_providers(tmp_path: Path) -> None:
    played = await _play("ours", tmp_path)
    assert notes(played.records) == EXPECTED
    assert [[m["content"] for m in body] for body in bodies(played.requests)] == [
        ["complete me"], ["stream me"], ["slow"]]
    assert [r["body"].get("max_completion_tokens") for r in played.requests][:2] == [77, 55]


@needs_node
@needs_reference
async def test_typescript_model_calls_as_in_the_reference(tmp_path: Path) -> None:
    ours, theirs = await _play("ours", tmp_path / "o"), await _play("reference", tmp_path / "r")
    assert notes(ours.records) == notes(theirs.records)
    assert [r["body"] for r in ours.requests] == [r["body"] for r in theirs.requests]
