"""``ctx.sessionManager`` and ``ctx.modelRegistry`` of a TypeScript extension in our pi: pi makes their
reads synchronous, so the sidecar blocks on a reply pipe for each. The same ``ext.ts`` runs in our pi
and in the reference pi 1.6.0; what it reports (as a notify) must be the same on both sides.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.reference.test_extensions_parity import Parity, comparable, notes, play_side, text_reply
from tests.reference.test_rpc_reference import differences
from tests.support.rpc_compare import Conversation, Record, needs_reference
from tests.support.ts_runtime import needs_node, ts_runtime

__all__ = ["ts_runtime"]  # the module fixture installing the sidecar runtime

SESSION_TS = """
export default function (pi) {
  pi.registerCommand("inspect", {
    handler: async (args, ctx) => {
      const sm = ctx.sessionManager;
      pi.appendEntry("mark", { n: 1 });
      const entries = sm.getEntries();
      const leaf = sm.getLeafId();
      const last = entries[entries.length - 1];
      ctx.ui.notify(JSON.stringify({
        entries: entries.map((e) => e.type + (e.customType ? ":" + e.customType : "")),
        branch: sm.getBranch().map((e) => e.type),
        context: sm.buildContextEntries().map((e) => e.type),
        leafIsLast: leaf === last.id,
        leafEntry: sm.getLeafEntry()?.customType ?? null,
        entry: sm.getEntry(entries[0].id)?.type ?? null,
        header: sm.getHeader()?.type ?? null,
        headerId: sm.getHeader()?.id === sm.getSessionId(),
        file: sm.getSessionFile() ?? null,
        name: sm.getSessionName() ?? null,
        cwd: sm.getCwd() === ctx.cwd,
        tree: sm.getTree().length,
        label: sm.getLabel(leaf) ?? null,
        data: last.data,
      }));
    },
  });
}
"""

MODELS_TS = """
export default function (pi) {
  pi.registerCommand("models", {
    handler: async (args, ctx) => {
      const reg = ctx.modelRegistry;
      const found = reg.find("fake", "fake-model");
      const auth = await reg.getApiKeyAndHeaders(found);
      ctx.ui.notify(JSON.stringify({
        found: found && { id: found.id, provider: found.provider, api: found.api, contextWindow: found.contextWindow },
        missing: reg.find("fake", "nope") ?? null,
        all: reg.getAll().filter((m) => m.provider === "fake").map((m) => m.id),
        available: reg.getAvailable().some((m) => m.provider === "fake" && m.id === "fake-model"),
        configured: reg.hasConfiguredAuth(found),
        oauth: reg.isUsingOAuth(found),
        auth: { ok: auth.ok, apiKey: auth.apiKey },
        key: (await reg.getApiKeyForProvider("fake")) ?? null,
      }));
    },
  });
}
"""


async def _command(conv: Conversation, name: str) -> None:
    """``/name``, read through its response (the handler's notify comes before it)."""
    await conv.response(await conv.send({"type": "prompt", "message": f"/{name}"}))


async def _inspect(conv: Conversation) -> None:
    await conv.prompt("hello")
    await _command(conv, "inspect")


def _check_inspect(records: list[Record], requests: list[dict[str, Any]]) -> None:
    report = json.loads(notes(records)[-1])
    assert report["entries"][-3:] == ["message", "message", "custom:mark"]  # the appended entry is seen
    assert report["branch"] == [e.split(":")[0] for e in report["entries"]]
    assert report["leafIsLast"] and report["leafEntry"] == "mark" and report["data"] == {"n": 1}
    assert report["header"] == "session" and report["headerId"] and report["cwd"]
    assert report["file"] is None  # --no-session


async def _models(conv: Conversation) -> None:
    await _command(conv, "models")


def _check_models(records: list[Record], requests: list[dict[str, Any]]) -> None:
    report = json.loads(notes(records)[-1])
    assert report["found"]["id"] == "fake-model" and report["missing"] is None
    assert report["all"] == ["fake-model"] and report["available"] and report["configured"]
    assert report["auth"] == {"ok": True, "apiKey": "dummy"} and report["key"] == "dummy"


SCENARIOS = {
    "session_manager": Parity(SESSION_TS, "", _inspect, _check_inspect, script=[text_reply("hi")]),
    "model_registry": Parity(MODELS_TS, "", _models, _check_models),
}


@needs_node
@pytest.mark.parametrize("name", list(SCENARIOS))
async def test_typescript_context_reads_here(name, tmp_path):
    parity = SCENARIOS[name]
    ours = await play_side("ours", parity, tmp_path, ".ts")
    parity.check(ours.records, ours.requests)


@needs_node
@needs_reference
@pytest.mark.parametrize("name", list(SCENARIOS))
async def test_typescript_context_reads_as_the_reference(name, tmp_path):
    parity = SCENARIOS[name]
    ours = comparable(await play_side("ours", parity, tmp_path / "o", ".ts"))
    theirs = comparable(await play_side("reference", parity, tmp_path / "r", ".ts"))
    assert notes(theirs[0]) and notes(ours[0]) == notes(theirs[0])
    found = differences(ours[0], theirs[0], "records")
    assert not found, "\n".join(found)
