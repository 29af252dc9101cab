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

from tests.rpc_compare import Conversation, Played, Record, Scenario, needs_reference, only, play
from tests.test_extensions_parity import comparable
from tests.test_rpc_reference import differences

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "extensions"


async def play_example(kind: str, example: str, ts: str, drive: Callable[[Conversation], Awaitable[None]],
                       root: Path, args: tuple[str, ...] = (), script: list[dict[str, Any]] | None = None) -> Played:
    """Play ``drive`` with the example (ours) or its TypeScript twin (reference) loaded by ``-e``."""
    folder = root / f"{kind}-ext"
    folder.mkdir(parents=True)
    if kind == "ours":
        path = folder / "ext.py"
        shutil.copy(EXAMPLES / example, path)
    else:
        path = folder / "ext.ts"
        path.write_text(textwrap.dedent(ts))
    return await play(kind, Scenario(script or [], drive, args=("--no-session", "-e", str(path), *args)), root)


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
    "inline": (("--profile=quick", "--plan=yes", "--tools", "+plan_step"),
               {"plan": True, "profile": "quick", "active": ["read", "bash", "edit", "write", "plan_step"]}),
}


@pytest.mark.parametrize("case", list(FLAG_CASES))
async def test_extension_flags_on_the_command_line(case: str, tmp_path: Path) -> None:
    args, expected = FLAG_CASES[case]
    ours = await play_example("ours", "cli_flags.py", FLAGS_TS, _flags, tmp_path, args)
    assert [json.loads(note) for note in notes(ours.records)] == [expected]


@needs_reference
@pytest.mark.parametrize("case", list(FLAG_CASES))
async def test_extension_flags_match_reference(case: str, tmp_path: Path) -> None:
    args, _ = FLAG_CASES[case]
    reference = await play_example("reference", "cli_flags.py", FLAGS_TS, _flags, tmp_path, args)
    ours = await play_example("ours", "cli_flags.py", FLAGS_TS, _flags, tmp_path, args)
    assert notes(ours.records) == notes(reference.records)


async def _exit_status(kind: str, root: Path, *args: str) -> tuple[int, list[str]]:
    """Start one side with the flags example and ``args``; its exit status and its ``Error:`` lines."""
    from tests.fakes.llm_server import FakeLLMServer
    from tests.rpc_compare import Workspace

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
