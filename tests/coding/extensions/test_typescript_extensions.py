"""pi's TypeScript extensions in our pi, through the Node.js sidecar.

The scenarios of ``test_extensions_parity`` (each an extension written in TypeScript for the reference
pi) are played with the same ``ext.ts`` on both sides: ours must give the records the reference
gives. Needs Node.js >= 20 and the sidecar's runtime (jiti, TypeBox), which the first test installs
from npm into the user cache folder; skipped with the reason when either is missing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.reference.test_extensions_parity import SCENARIOS, comparable, play_named, scenario_params
from tests.reference.test_rpc_reference import differences
from tests.support.compiled_once import stable_source
from tests.support.package_fixtures import get_commands, make_package, rpc_records
from tests.support.rpc_compare import Played, needs_reference
from tests.support.ts_runtime import needs_node, ts_runtime

__all__ = ["ts_runtime"]  # the module fixture installing the sidecar runtime


pytestmark = pytest.mark.slow  # every test here but one starts Node.js (the sidecar or the reference)

COMPARED = list(SCENARIOS)
# where a notice of a session_start handler comes after the first command's answer here (the handler
# runs in the sidecar while the command loop already answers; pi runs it before): compared without
# that ordering
REORDERED = {"get_commands"}
# Where a command's response may land among the events of the run it started: the sidecar answers
# pi.sendMessage over a pipe, so under load the run can begin before the command's response is out.
RESPONSE_ANYWHERE = {"send_message"}


async def play_typescript(kind: str, name: str, root: Path) -> Played:
    """Scenario ``name`` with its ``ext.ts`` on side ``kind``, played once per process (the reference's
    run is the one ``test_extensions_parity`` compares with our Python extension)."""
    return await play_named(kind, name, root, ".ts")


@needs_node
@pytest.mark.parametrize("name", scenario_params(COMPARED))
async def test_typescript_extension_runs_here(name: str, tmp_path: Path) -> None:
    """Each scenario's expectations hold for its TypeScript extension in our pi."""
    ours = await play_typescript("ours", name, tmp_path)
    SCENARIOS[name].check(ours.records, ours.requests)


@needs_node
@needs_reference
@pytest.mark.parametrize("name", scenario_params(COMPARED))
async def test_typescript_extension_gives_the_reference_records(name: str, tmp_path: Path) -> None:
    ours, theirs = comparable(await play_typescript("ours", name, tmp_path / "o")), \
        comparable(await play_typescript("reference", name, tmp_path / "r"))
    if name in REORDERED:
        ours, theirs = (sorted(ours[0], key=_order), ours[1]), (sorted(theirs[0], key=_order), theirs[1])
    if name in RESPONSE_ANYWHERE:
        ours, theirs = (_responses_last(ours[0]), ours[1]), (_responses_last(theirs[0]), theirs[1])
    assert [r["type"] for r in ours[0]] == [r["type"] for r in theirs[0]]
    found = differences(ours[0], theirs[0], "records") + differences(ours[1], theirs[1], "requests")
    assert not found, "\n".join(found)


def _order(record: dict) -> str:
    return json.dumps(record, sort_keys=True)


def _responses_last(records: list[dict]) -> list[dict]:
    """The events in their order, then the responses in theirs."""
    return [r for r in records if r["type"] != "response"] + [r for r in records if r["type"] == "response"]


@needs_node
def test_typescript_extension_of_a_package_and_of_the_agent_dir(tmp_path):
    """A package's ``extensions/ext.ts`` and ``<agentDir>/extensions/x.ts`` load; get_commands shows them."""
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    agent = home / ".pi" / "agent"
    (agent / "extensions").mkdir(parents=True)
    (agent / "extensions" / "mine.ts").write_text(
        'export default function (pi: any) { pi.registerCommand("mine", { handler: async () => {} }); }\n')
    make_package(tmp_path / "p", "p", ts_command="hello")
    (agent / "settings.json").write_text(json.dumps({"packages": [str(tmp_path / "p")]}))
    env = {**os.environ, "HOME": str(home)}
    commands, stderr = get_commands("ours", [], env, work)
    names = [c["name"] for c in commands if c["source"] == "extension" and c["sourceInfo"]["source"] != "builtin"]
    assert names == ["mine", "hello"], stderr


def test_without_node_a_typescript_extension_is_named_and_skipped(tmp_path):
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    (home / ".pi" / "agent").mkdir(parents=True)
    ext = tmp_path / "ext.ts"
    ext.write_text("export default function () {}\n")
    python_dir = Path(os.__file__).parent  # a PATH with no node on it
    env = {**os.environ, "HOME": str(home), "PATH": str(python_dir)}
    records, stderr = rpc_records("ours", ["-e", str(ext)], env, work, [{"type": "get_state", "id": "s"}])
    assert any(r.get("id") == "s" and r["success"] for r in records)  # the run goes on
    errors = [r for r in records if r.get("type") == "extension_error"]
    assert [(e["extensionPath"], e["event"]) for e in errors] == [(str(ext), "load")]
    assert "Node.js >= 20" in errors[0]["error"]
    assert [line for line in stderr.splitlines() if "ext.ts" in line] == [
        f'Error: Failed to load extension "{ext}": TypeScript extensions need Node.js >= 20 on PATH '
        "(node not found)"]


PROVIDER_TS = """export default function (pi: any) {
  pi.registerProvider("tsprov", {
    baseUrl: "http://127.0.0.1:9/v1", apiKey: "dummy", api: "openai-completions",
    models: [{ id: "ts-model", name: "TS Model", reasoning: false, input: ["text"],
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: 1000, maxTokens: 100 }],
  });
}
"""


@needs_node
@needs_reference
def test_typescript_provider_registration_gives_the_reference_models(tmp_path):
    """``pi.registerProvider`` made while loading is in place before the first command is answered."""
    ext = stable_source("provider/ext.ts", PROVIDER_TS)  # compiled by jiti once across runs
    answers = {}
    for kind in ("ours", "reference"):
        home = tmp_path / kind
        (home / ".pi" / "agent").mkdir(parents=True)
        records, _ = rpc_records(kind, ["-e", str(ext)], {**os.environ, "HOME": str(home)}, tmp_path,
                                 [{"type": "get_available_models", "id": "m"}])
        answers[kind] = next(r for r in records if r.get("id") == "m")["data"]["models"]
    assert answers["ours"] == answers["reference"]
    assert [m["id"] for m in answers["ours"]] == ["ts-model"]


@needs_node
async def test_the_sidecar_ends_with_the_session(tmp_path):
    """One Node.js process for the session's TypeScript extensions, gone after ``shutdown``."""
    from pi_coding_agent.coding.bootstrap import create_session
    from pi_coding_agent.coding.options import CliArgs

    exts = []
    for name in ("a", "b"):
        exts.append(stable_source(f"sidecar/{name}.ts", f'export default function (pi: any) {{ pi.registerCommand("{name}", {{ handler: async () => {{}} }}); }}\n'))
    args = CliArgs(no_session=True, extensions=[str(e) for e in exts])
    session = await create_session(args, "sdk", cwd=tmp_path, agent_dir=tmp_path / "agent")
    sidecar = session.extensions.sidecar
    assert [c["name"] for c in session.get_commands() if c["source"] == "extension"][:2] == ["a", "b"]
    proc = sidecar.proc
    assert proc is not None and proc.returncode is None
    await session.shutdown()
    assert proc.returncode == 0 and sidecar.proc is None



BURST_TEXT = " ".join(f"word{i}" for i in range(60))
BURST_TS = """
export default function (pi) {
  let seen = "";
  pi.on("message_update", (event, ctx) => {
    const delta = event.assistantMessageEvent;
    if (delta.type !== "text_delta") return;
    seen += delta.delta;
    ctx.ui.setStatus("seen", seen);
    if (seen === delta.delta) throw new Error("delta exploded");
  });
}
"""


@needs_node
async def test_a_burst_of_deltas_keeps_its_order_and_its_effects(tmp_path: Path) -> None:
    """The message_update handlers, posted without waiting, see the deltas in order; all their
    ``setStatus`` calls reach the client before ``message_end`` (which no TypeScript handler awaits),
    and the raising one is an extension_error."""
    from tests.reference.test_extensions_parity import Parity, _prompt, play_side, text_reply

    played = await play_side("ours", Parity(BURST_TS, "", _prompt, lambda *_: None,
                                            script=[text_reply(BURST_TEXT)]), tmp_path, ".ts")
    records = played.records
    deltas = [r["assistantMessageEvent"]["delta"] for r in records if r["type"] == "message_update"
              and r["assistantMessageEvent"]["type"] == "text_delta"]
    assert len(deltas) > 2
    end = next(i for i, r in enumerate(records) if r["type"] == "message_end" and r["message"]["role"] == "assistant")
    statuses = [r["statusText"] for r in records[:end]
                if r["type"] == "extension_ui_request" and r["method"] == "setStatus"]
    assert statuses == ["".join(deltas[:n]) for n in range(1, len(deltas) + 1)]
    assert statuses[-1] == BURST_TEXT
    errors = [(r["event"], r["error"]) for r in records[:end] if r["type"] == "extension_error"]
    assert errors == [("message_update", "delta exploded")]
