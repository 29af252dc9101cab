"""``PI_PACKAGE_DIR`` moves the documentation paths of the system prompt (README, docs, examples), as in
pi 1.6.0 (for packagers such as Nix or Guix); ``~`` is expanded."""

from __future__ import annotations

from pathlib import Path

from tests.support.fakes.llm_server import FakeLLMServer
from tests.support.rpc_compare import Conversation, Workspace, needs_reference


async def _system_prompt(kind: str, root: Path) -> tuple[str, Path]:
    with FakeLLMServer() as server:
        ws = Workspace.create(root / kind, server.url)
        ws.env["PI_PACKAGE_DIR"] = "~/pkg"
        pi = await ws.spawn(kind, "--no-session")
        try:
            await Conversation(pi, server, ws).prompt("hi")
        finally:
            await pi.kill()
        messages = server.requests[0]["body"]["messages"]
        return next(m["content"] for m in messages if m["role"] in ("system", "developer")), Path(ws.env["HOME"])


def _doc_paths(prompt: str, home: Path) -> list[str]:
    return sorted(word for word in prompt.split() if word.startswith(f"{home}/pkg"))


async def test_the_docs_paths_follow_pi_package_dir(tmp_path: Path) -> None:
    prompt, home = await _system_prompt("ours", tmp_path)
    assert _doc_paths(prompt, home) == [f"{home}/pkg/README.md", f"{home}/pkg/docs", f"{home}/pkg/examples"]


@needs_reference
async def test_the_docs_paths_match_the_reference(tmp_path: Path) -> None:
    ours, reference = await _system_prompt("ours", tmp_path), await _system_prompt("reference", tmp_path)
    assert [p.replace(str(ours[1]), "~") for p in _doc_paths(*ours)] == \
        [p.replace(str(reference[1]), "~") for p in _doc_paths(*reference)]
