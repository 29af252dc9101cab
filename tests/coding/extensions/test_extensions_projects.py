"""Issue 12, extensions and other projects: a session of another directory brings that project's
extensions, ``--session <id>`` of another project is refused clearly (``--fork`` copies it), and
``project_trust`` lets user and ``-e`` extensions decide a project's trust. Ours over real RPC pipes,
then side by side with the reference pi 1.6.0 (skipped without it)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.coding.extensions.test_extensions_fidelity import EXAMPLES, notes, play_example
from tests.support.fakes.llm_server import FakeLLMServer
from tests.support.rpc_compare import Conversation, Workspace, needs_reference
from tests.support.run_once import ours_once, shared_run

pytestmark = shared_run("extension-projects")  # tests of ours alone and comparisons read the same runs

# --------------------------------------------------------------------------- another project's extensions

PROJECT_EXT = {
    "py": """
def setup(pi):
    def where(args, ctx):
        ctx.ui.notify(f"@NAME@ in {ctx.cwd}", "info")

    pi.register_command("@NAME@-where", handler=where)
""",
    "ts": """
export default function (pi) {
  pi.registerCommand("@NAME@-where", { handler: async (args, ctx) => { ctx.ui.notify(`@NAME@ in ${ctx.cwd}`, "info"); } });
}
""",
}


def _project_with_extension(directory: Path, name: str, kind: str) -> None:
    suffix = "py" if kind == "ours" else "ts"
    folder = directory / ".pi" / "extensions"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.{suffix}").write_text(textwrap.dedent(PROJECT_EXT[suffix].replace("@NAME@", name)))


async def _switch_projects(kind: str, root: Path, start_has_one: bool = True) -> dict[str, Any]:
    with FakeLLMServer() as server:
        workspace = Workspace.create(root / kind, server.url)
        other = workspace.root / "other"
        if start_has_one:
            _project_with_extension(workspace.cwd, "start", kind)
        _project_with_extension(other, "other", kind)
        session = workspace.root / "other.jsonl"
        session.write_text(json.dumps({"type": "session", "version": 3, "id": "0190a000-0000-7000-8000-00000000000a",
                                       "timestamp": "2026-01-01T00:00:00.000Z", "cwd": str(other)}) + "\n")
        proc = await workspace.spawn(kind, "--no-session", "-a")
        conv = Conversation(proc, server, workspace)

        async def commands() -> list[str]:
            listed = (await conv.request({"type": "get_commands"}))["data"]["commands"]
            return sorted(c["name"] for c in listed if c["source"] == "extension"
                          and not c["sourceInfo"]["path"].startswith("builtin:"))

        try:
            before = await commands()
            switched = await conv.request({"type": "switch_session", "sessionPath": str(session)})
            after = await commands()
            await conv.request({"type": "prompt", "message": "/other-where"})
        finally:
            await proc.kill()
    base = str(workspace.root)
    # a refusal's error in place of False: the comparison then names why (it failed once under load)
    return {"before": before, "switched": switched["success"] or switched.get("error"), "after": after,
            "notes": [n.replace(base, "ROOT") for n in notes(conv.records)]}


@pytest.mark.parametrize("start_has_one", [True, False])
@pytest.mark.slow
async def test_switch_session_loads_the_other_projects_extensions(tmp_path: Path, start_has_one: bool) -> None:
    assert await ours_once(_switch_projects, tmp_path, start_has_one) == {
        "before": ["start-where"] if start_has_one else [], "switched": True, "after": ["other-where"],
        "notes": ["other in ROOT/other"]}


@needs_reference
@pytest.mark.parametrize("start_has_one", [True, False])
async def test_switch_session_extensions_match_reference(tmp_path: Path, start_has_one: bool) -> None:
    assert await ours_once(_switch_projects, tmp_path, start_has_one) == await _switch_projects(
        "reference", tmp_path, start_has_one)


# --------------------------------------------------------------------------- --session <id of another project>

FOREIGN_ID = "0190a000-0000-7000-8000-0000000000cc"


async def _start_with_foreign_id(kind: str, root: Path, flag: str,
                                 shared: bool = False) -> tuple[int | None, list[str], str]:
    """Start with ``flag <id>`` naming a session recorded in another project; send one get_state.
    ``shared``: the session is in a ``--session-dir`` both projects use."""
    from pi_coding_agent.coding import paths

    with FakeLLMServer() as server:
        workspace = Workspace.create(root / kind, server.url)
        other = workspace.root / "other"
        other.mkdir()
        folder = workspace.root / "shared" if shared else paths.default_session_dir(workspace.agent_dir, other)
        folder.mkdir(parents=True)
        (folder / "2026-01-01_x.jsonl").write_text(json.dumps({
            "type": "session", "version": 3, "id": FOREIGN_ID, "timestamp": "2026-01-01T00:00:00.000Z",
            "cwd": str(other)}) + "\n")
        proc = await workspace.spawn(kind, flag, FOREIGN_ID, *(("--session-dir", str(folder)) if shared else ()))
        await proc.send({"type": "get_state", "id": "s"})
        await proc.close_stdin()
        assert proc.proc.stdout is not None and proc.proc.stderr is not None
        stdout = (await proc.proc.stdout.read()).decode()
        stderr = (await proc.proc.stderr.read()).decode()
        status = await proc.proc.wait()
    base = str(workspace.root)
    return status, stdout.replace(base, "ROOT").splitlines(), stderr.replace(base, "ROOT")


async def test_session_id_of_another_project_is_refused_clearly(tmp_path: Path) -> None:
    status, stdout, stderr = await _start_with_foreign_id("ours", tmp_path, "--session")
    assert (status, stdout) == (1, [])
    assert stderr.startswith("Session found in different project: ROOT/other\n"
                             f"Error: Session '{FOREIGN_ID}' belongs to another project (ROOT/other). "
                             "Open it there with --session ROOT/agent/sessions/")


async def test_another_projects_session_in_a_shared_session_dir_is_refused(tmp_path: Path) -> None:
    """A ``--session-dir`` several projects share: only this project's sessions open by id (ours opened
    the other project's and ran its tools there)."""
    status, stdout, stderr = await _start_with_foreign_id("ours", tmp_path, "--session", shared=True)
    assert (status, stdout) == (1, [])
    assert stderr.startswith("Session found in different project: ROOT/other\n")


@pytest.mark.slow
async def test_fork_of_another_projects_session_id_starts_here(tmp_path: Path) -> None:
    status, stdout, _ = await _start_with_foreign_id("ours", tmp_path, "--fork")
    state = json.loads(stdout[0])
    assert status == 0 and state["success"] and state["data"]["sessionFile"].startswith("ROOT/agent/sessions/--")
    assert "-work--/" in state["data"]["sessionFile"]  # a copy in this project's folder (ROOT/work)


@needs_reference
async def test_session_id_of_another_project_beside_reference(tmp_path: Path) -> None:
    """pi asks on stderr whether to fork, takes the client's first command line as the answer and exits 0
    without a response ("Aborted."); we refuse with exit 1 and say what to do (docs/rpc.md). ``--fork`` agrees."""
    for shared in (False, True):
        status, stdout, stderr = await _start_with_foreign_id("reference", tmp_path / f"s{shared}", "--session",
                                                              shared)
        assert (status, stdout) == (0, []) and stderr.startswith("Session found in different project: ROOT/other\n")
        ours = await _start_with_foreign_id("ours", tmp_path / f"s{shared}", "--session", shared)
        assert ours[2].split("\n")[0] == stderr.split("\n")[0]
    ours = await _start_with_foreign_id("ours", tmp_path / "f", "--fork")
    theirs = await _start_with_foreign_id("reference", tmp_path / "f", "--fork")
    assert (ours[0], json.loads(ours[1][0])["success"]) == (theirs[0], json.loads(theirs[1][0])["success"])


# --------------------------------------------------------------------------- project_trust

TRUST_TS = """
import { resolve } from "node:path";

function under(cwd, variable) {
  const roots = (process.env[variable] ?? "").split(":").filter(Boolean).map((r) => resolve(r));
  const here = resolve(cwd);
  return roots.some((root) => here === root || here.startsWith(root + "/"));
}

export default function (pi) {
  pi.on("project_trust", (event) => {
    if (under(event.cwd, "PI_TRUSTED_ROOTS")) return { trusted: "yes" };
    if (under(event.cwd, "PI_UNTRUSTED_ROOTS")) return { trusted: "no" };
    return { trusted: "undecided" };
  });
}
"""


async def _project_commands(conv: Conversation) -> None:
    listed = (await conv.request({"type": "get_commands"}))["data"]["commands"]
    conv.records.append({"type": "prompts", "names": sorted(c["name"] for c in listed if c["source"] == "prompt")})


async def _trust_case(kind: str, root: Path, variable: str | None, *args: str) -> list[str]:
    def env_of(_url: str) -> dict[str, str]:
        return {variable: str(root / kind / "work")} if variable else {}

    async def drive(conv: Conversation) -> None:
        await _project_commands(conv)

    def prepare(workspace: Workspace) -> None:
        folder = workspace.cwd / ".pi" / "prompts"
        folder.mkdir(parents=True)
        (folder / "project-only.md").write_text("---\ndescription: from the project\n---\nhello")

    played = await play_example(kind, "trust_gate.py", TRUST_TS, drive, root, args, env_of=env_of, prepare=prepare)
    return next(r["names"] for r in played.records if r["type"] == "prompts")


TRUST_CASES = {"trusted": ("PI_TRUSTED_ROOTS", ()), "refused": ("PI_UNTRUSTED_ROOTS", ()),
               "undecided": (None, ()), "flag wins": ("PI_UNTRUSTED_ROOTS", ("-a",))}


@pytest.mark.parametrize("case", list(TRUST_CASES))
@pytest.mark.slow
async def test_project_trust_from_an_extension(case: str, tmp_path: Path) -> None:
    variable, args = TRUST_CASES[case]
    expected = ["project-only"] if case in ("trusted", "flag wins") else []
    assert await ours_once(_trust_case, tmp_path, variable, *args) == expected


@needs_reference
@pytest.mark.parametrize("case", ["trusted", "refused", "flag wins"])
async def test_project_trust_matches_reference(case: str, tmp_path: Path) -> None:
    variable, args = TRUST_CASES[case]
    assert await ours_once(_trust_case, tmp_path, variable, *args) == await _trust_case(
        "reference", tmp_path, variable, *args)


def _session_of(path: Path, cwd: Path, session_id: str) -> Path:
    path.write_text(json.dumps({"type": "session", "version": 3, "id": session_id,
                                "timestamp": "2026-01-01T00:00:00.000Z", "cwd": str(cwd)}) + "\n")
    return path


async def _switch_with_trust_gate(kind: str, root: Path, variable: str, round_trips: int = 0) -> list[str]:
    """Start in a plain directory with the trust example, switch to a session of ``other/`` (which has a
    prompt template of its own), ``round_trips`` times back to a session of the start directory and to
    ``other/`` again: the prompts listed afterwards."""
    with FakeLLMServer() as server:
        workspace = Workspace.create(root / kind, server.url)
        other = workspace.root / "other"
        (other / ".pi" / "prompts").mkdir(parents=True)
        (other / ".pi" / "prompts" / "other-only.md").write_text("---\ndescription: other\n---\nhi")
        workspace.env[variable] = str(other)
        session = _session_of(workspace.root / "other.jsonl", other, "0190a000-0000-7000-8000-00000000000b")
        home = _session_of(workspace.root / "home.jsonl", workspace.cwd, "0190a000-0000-7000-8000-00000000000c")
        if kind == "ours":
            extension = EXAMPLES / "trust_gate.py"
        else:
            extension = workspace.root / "trust_gate.ts"
            extension.write_text(textwrap.dedent(TRUST_TS))
        proc = await workspace.spawn(kind, "--no-session", "-e", str(extension))
        conv = Conversation(proc, server, workspace)
        try:
            for target in [session, *[home, session] * round_trips]:
                switched = await conv.request({"type": "switch_session", "sessionPath": str(target)})
                assert switched["success"], switched
            listed = (await conv.request({"type": "get_commands"}))["data"]["commands"]
        finally:
            await proc.kill()
    return sorted(c["name"] for c in listed if c["source"] == "prompt")


@pytest.mark.parametrize(("variable", "expected"), [("PI_TRUSTED_ROOTS", ["other-only"]),
                                                    ("PI_UNTRUSTED_ROOTS", [])])
@pytest.mark.slow
async def test_project_trust_when_a_switch_enters_another_project(tmp_path: Path, variable: str,
                                                                  expected: list[str]) -> None:
    assert await ours_once(_switch_with_trust_gate, tmp_path, variable) == expected


@needs_reference
@pytest.mark.parametrize("variable", ["PI_TRUSTED_ROOTS", "PI_UNTRUSTED_ROOTS"])
async def test_project_trust_on_switch_matches_reference(tmp_path: Path, variable: str) -> None:
    assert await ours_once(_switch_with_trust_gate, tmp_path, variable) == await _switch_with_trust_gate(
        "reference", tmp_path, variable)


@pytest.mark.slow
async def test_an_answer_for_the_run_holds_when_a_switch_comes_back(tmp_path: Path) -> None:
    """pi decides a folder's trust once per process: the extension's "yes" (not remembered, so trust.json
    stays empty) still holds when the session leaves ``other/`` and a later switch enters it again."""
    assert await ours_once(_switch_with_trust_gate, tmp_path, "PI_TRUSTED_ROOTS", 1) == ["other-only"]


@needs_reference
async def test_an_answer_for_the_run_holds_as_in_reference(tmp_path: Path) -> None:
    assert await ours_once(_switch_with_trust_gate, tmp_path, "PI_TRUSTED_ROOTS", 1) == await _switch_with_trust_gate(
        "reference", tmp_path, "PI_TRUSTED_ROOTS", 1)
