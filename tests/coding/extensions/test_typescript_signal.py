"""An abort reaches TypeScript code as in pi: a tool's ``execute`` gets an AbortSignal (also its
``ctx.signal``), handlers read the run's signal as ``ctx.signal``, and an RPC ``abort`` fires it; the
run waits for the tool, whose own result is the tool result.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.reference.test_extensions_parity import (
    Parity,
    comparable,
    messages,
    notes,
    play_side,
    text_reply,
    tool_call,
)
from tests.reference.test_rpc_reference import differences
from tests.support.rpc_compare import Conversation, Played, Record, is_settled, needs_reference
from tests.support.ts_runtime import needs_node, ts_runtime  # noqa: F401

pytestmark = pytest.mark.slow

SIGNAL_TS = """
export default function (pi) {
  const seen = (signal) => (signal === undefined ? "none" : String(signal.aborted));
  pi.on("tool_execution_start", async (event, ctx) => ctx.ui.notify(`tool_execution_start ${seen(ctx.signal)}`));
  pi.on("message_end", async (event, ctx) => ctx.ui.notify(`message_end ${event.message.role} ${seen(ctx.signal)}`));
  pi.registerCommand("idle", { handler: async (args, ctx) => ctx.ui.notify(`command ${seen(ctx.signal)}`) });
  pi.registerTool({
    name: "wait_abort", label: "Wait", description: "Waits until the run is aborted",
    parameters: { type: "object", properties: {} },
    async execute(id, params, signal, onUpdate, ctx) {
      ctx.ui.notify(`tool ${seen(signal)}, ctx.signal is it: ${ctx.signal === signal}`);
      onUpdate({ content: [{ type: "text", text: "waiting" }] });
      await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
      ctx.ui.notify(`tool saw ${signal.reason}`);
      return { content: [{ type: "text", text: `stopped: ${signal.aborted}` }] };
    },
  });
}
"""


async def _abort_while_waiting(conv: Conversation) -> None:
    await conv.send({"type": "prompt", "message": "go"})
    await conv.read_until(lambda r: r["type"] == "tool_execution_update")
    await conv.send({"type": "abort"})
    await conv.read_until(is_settled)
    await conv.request({"type": "prompt", "message": "/idle"})


async def _play(kind: str, root: Path) -> Played:
    parity = Parity(SIGNAL_TS, "", _abort_while_waiting, lambda *_: None,
                    script=[tool_call(("call_1", "wait_abort", {})), text_reply("never sent")])
    return await play_side(kind, parity, root, ".ts")


def _check(records: list[Record]) -> None:
    assert notes(records) == [
        "message_end system false", "message_end user false", "message_end assistant false",
        "tool_execution_start false", "tool false, ctx.signal is it: true",
        "tool saw AbortError: This operation was aborted", "message_end toolResult true",
        "message_end assistant true",  # the next turn's, aborted before its request
        "command none"]  # no run, no signal
    result = messages(records, "toolResult")[0]
    assert result["content"] == [{"type": "text", "text": "stopped: true"}] and not result["isError"]
    assert next(r for r in records if r["type"] == "agent_settled")["aborted"] is True


@needs_node
async def test_an_abort_reaches_a_typescript_tool_through_its_signal(tmp_path: Path) -> None:
    _check((await _play("ours", tmp_path)).records)


@needs_node
@needs_reference
async def test_an_abort_reaches_a_typescript_tool_as_in_the_reference(tmp_path: Path) -> None:
    ours, theirs = comparable(await _play("ours", tmp_path / "o")), comparable(await _play("reference", tmp_path / "r"))
    assert [r["type"] for r in ours[0]] == [r["type"] for r in theirs[0]]
    found = differences(ours[0], theirs[0], "records") + differences(ours[1], theirs[1], "requests")
    assert not found, "\n".join(found)
