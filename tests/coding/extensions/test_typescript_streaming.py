"""What a TypeScript ``message_update`` handler sees while a reply streams: the sidecar gets the
message once and each later event's delta, and rebuilds ``event.message`` itself, so after each
delta the handler must see the message as it stands after *that* delta (pi's partial message), not
as it stands after the whole network read, and never a block twice or a delta lost.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.reference.test_extensions_parity import Parity, _prompt, play_side, text_reply
from tests.support.rpc_compare import Played, Record, needs_reference
from tests.support.ts_runtime import needs_node, ts_runtime  # noqa: F401

pytestmark = pytest.mark.slow

# each event: what the handler sees of the message (its keys and content, its stop reason) and the event
SEEN_TS = """
export default function (pi) {
  pi.on("message_update", (event, ctx) => {
    const { message, assistantMessageEvent: e } = event;
    ctx.ui.setStatus("seen", JSON.stringify({
      event: e.type, index: e.contentIndex, delta: e.delta, role: message.role,
      stopReason: message.stopReason, keys: Object.keys(message).sort(), content: message.content,
    }));
  });
}
"""

TEXT = " ".join(f"word{i}" for i in range(80))
THOUGHT = "first I think, then I think again, " * 4
MIXED_REPLY: dict[str, Any] = {
    "content": [{"type": "thinking", "thinking": THOUGHT}, {"type": "text", "text": TEXT},
                {"type": "toolCall", "id": "call_1", "name": "bash",
                 "arguments": {"command": "echo " + "x" * 60}}],
    "usage": {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0}, "chunkSize": 5}


async def _seen(kind: str, root: Path) -> list[dict[str, Any]]:
    played: Played = await play_side(kind, Parity(SEEN_TS, "", _prompt, lambda *_: None,
                                                  script=[MIXED_REPLY, text_reply("done")]), root, ".ts")
    return [json.loads(r["statusText"]) for r in _statuses(played.records)]


def _statuses(records: list[Record]) -> list[Record]:
    return [r for r in records if r["type"] == "extension_ui_request" and r["method"] == "setStatus"]


def _by_delta(seen: list[dict[str, Any]]) -> list[str]:
    """The text each text/thinking delta event saw in its own block, from the deltas so far."""
    wrong = []
    so_far: dict[int, str] = {}
    for number, item in enumerate(seen):
        index = item["index"]
        if item["event"].endswith("_start"):
            so_far[index] = ""
        if item["event"] not in ("text_delta", "thinking_delta"):
            continue
        so_far[index] += item["delta"]
        block = item["content"][index]
        text = block["text"] if block["type"] == "text" else block["thinking"]
        if text != so_far[index]:
            wrong.append(f"event {number} ({item['event']}): saw {text!r}, deltas so far {so_far[index]!r}")
    return wrong


@needs_node
async def test_each_delta_sees_the_message_as_of_that_delta(tmp_path: Path) -> None:
    seen = await _seen("ours", tmp_path)
    assert {item["event"] for item in seen} >= {"thinking_delta", "text_delta", "toolcall_delta", "toolcall_end"}
    assert not _by_delta(seen), "\n".join(_by_delta(seen)[:5])
    last = next(item for item in seen if item["event"] == "toolcall_end")  # the first reply, whole
    assert [b["type"] for b in last["content"]] == ["thinking", "text", "toolCall"]
    assert last["content"][1]["text"] == TEXT and last["content"][0]["thinking"] == THOUGHT
    assert last["content"][2]["arguments"] == {"command": "echo " + "x" * 60}


# pi's handlers see its live partial message, read when they run: (often) after the whole reply, so
# what is compared is the event's shape, the event itself and each block as it closes
SHAPE_TS = """
export default function (pi) {
  pi.on("message_update", (event, ctx) => {
    const { message, assistantMessageEvent: e } = event;
    const { partial, ...change } = e;
    const closed = e.type.endsWith("_end");
    ctx.ui.setStatus("shape", JSON.stringify({
      keys: Object.keys(event), eventKeys: Object.keys(e), role: partial.role, delta: e.delta,
      change: closed ? change : e.type, block: closed ? message.content[e.contentIndex] : undefined,
      partialBlock: closed ? partial.content[e.contentIndex] : undefined,
    }));
  });
}
"""


@needs_node
@needs_reference
async def test_handlers_see_the_reference_events(tmp_path: Path) -> None:
    """Event by event, what a handler sees has pi's shape (``assistantMessageEvent.partial`` included),
    and each block closes as it does in pi."""
    parity = Parity(SHAPE_TS, "", _prompt, lambda *_: None, script=[MIXED_REPLY, text_reply("done")])
    ours = _statuses((await play_side("ours", parity, tmp_path / "o", ".ts")).records)
    theirs = _statuses((await play_side("reference", parity, tmp_path / "r", ".ts")).records)
    assert len(ours) == len(theirs) > 100
    for number, (mine, pis) in enumerate(zip(ours, theirs, strict=True)):
        assert _without_wire_fields(json.loads(mine["statusText"])) == json.loads(pis["statusText"]), f"event {number}"


def _without_wire_fields(seen: dict[str, Any]) -> dict[str, Any]:
    """Our ``toolcall_start`` carries ``id`` and ``toolName``, which pi adds on the RPC wire only (a
    known difference of the events our extensions get, Python and TypeScript alike)."""
    if seen["change"] == "toolcall_start":
        seen["eventKeys"] = [k for k in seen["eventKeys"] if k not in ("id", "toolName")]
    return seen
