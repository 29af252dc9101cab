"""The sandbox's file-tool check cannot be raced: a thread flips a symlink between a workspace
directory and an outside one (or ``/proc/self/environ``) while hundreds of write, edit and read
calls go through it. The check and the open are one step, so nothing lands or is read outside."""

from __future__ import annotations

import asyncio
import os
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from pi_coding_agent.agent.tool import ToolError
from pi_coding_agent.ai.abort import AbortSignal
from pi_coding_agent.coding.sandbox.policy import SandboxPolicy
from pi_coding_agent.coding.tools.base import ToolEnv
from pi_coding_agent.coding.tools.builtin import create_builtin_tools

ROUNDS = 400


@contextmanager
def _flipping(link: Path, targets: tuple[str, str]) -> Iterator[None]:
    """``link`` points at each target in turn, swapped atomically (rename over it) until the block ends."""
    stop = threading.Event()

    def flip() -> None:
        spare = link.with_name(link.name + ".next")
        while not stop.is_set():
            for target in targets:
                os.symlink(target, spare)
                os.replace(spare, link)

    os.symlink(targets[0], link)
    thread = threading.Thread(target=flip, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def _tools(tmp_path: Path, scrub_env: bool = False) -> tuple[dict[str, Any], Path, Path]:
    work, outside, private_tmp = tmp_path / "work", tmp_path / "outside", tmp_path / "tmp"
    for folder in (work / "inside", outside, private_tmp):
        folder.mkdir(parents=True)
    policy = SandboxPolicy(mode="workspace-write", cwd=work, temp_dir=private_tmp, scrub_env=scrub_env)
    return create_builtin_tools(ToolEnv(cwd=work, sandbox=policy)), work, outside


async def _call(tool: Any, **params: Any) -> str | None:
    """The tool's text, or None when it refused or failed (a refusal is the right answer in a race)."""
    try:
        result = await tool.execute("t", tool.prepare_arguments(params), AbortSignal(), lambda _: None)
    except ToolError:
        return None
    return "".join(block.get("text", "") for block in result.content)


@pytest.mark.slow
async def test_writes_and_edits_through_a_flipping_link_never_land_outside(tmp_path: Path) -> None:
    tools, work, outside = _tools(tmp_path)
    for i in range(ROUNDS // 2):
        (outside / f"e{i}.txt").write_text("keep\n")
        (work / "inside" / f"e{i}.txt").write_text("keep\n")
    with _flipping(work / "link", ("inside", str(outside))):
        for start in range(0, ROUNDS, 20):  # twenty calls at a time, as one message's parallel calls run
            await asyncio.gather(*(_call(tools["write"], path=f"link/w{i}.txt", content="x")
                                   for i in range(start, start + 20)))
        for start in range(0, ROUNDS // 2, 20):
            await asyncio.gather(*(_call(tools["edit"], path=f"link/e{i}.txt",
                                         edits=[{"oldText": "keep", "newText": "lost"}])
                                   for i in range(start, start + 20)))
    escaped = sorted(p.name for p in outside.iterdir() if p.name.startswith("w") or p.read_text() != "keep\n")
    count = len(escaped)  # the count only: pytest would print the list
    assert count == 0, f"{count} of {ROUNDS + ROUNDS // 2} writes and edits landed outside"
    written = [p for p in (work / "inside").iterdir() if p.name.startswith("w")]
    assert written, "no write went through at all: the test raced nothing"


async def test_reads_through_a_link_flipping_to_proc_never_return_the_environment(tmp_path: Path) -> None:
    tools, work, _ = _tools(tmp_path)
    (work / "inside" / "harmless.txt").write_text("harmless\n")
    texts: list[str | None] = []
    with _flipping(work / "rlink", ("inside/harmless.txt", "/proc/self/environ")):
        for _ in range(ROUNDS // 20 * 2):
            texts += await asyncio.gather(*(_call(tools["read"], path="rlink") for _ in range(20)))
    leaked = [t for t in texts if t is not None and "PATH=" in t]
    count = len(leaked)  # the count only: pytest would print what leaked
    assert count == 0, f"{count} of {len(texts)} reads returned the process environment"
    assert "harmless" in "".join(t for t in texts if t is not None), "no read went through: the test raced nothing"


@pytest.mark.slow
async def test_grep_through_a_link_flipping_to_proc_never_finds_a_scrubbed_key(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ripgrep opens its path itself, so under a sandbox it runs inside bubblewrap with the scrubbed
    environment: whatever the link points at when it opens it, no ``/proc`` there holds the key."""
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap (bwrap) is not installed")
    monkeypatch.setenv("RACE_TEST_API_KEY", "sk-race-0123456789")
    tools, work, _ = _tools(tmp_path, scrub_env=True)
    (work / "inside" / "harmless.txt").write_text("sk-race-harmless\n")
    texts: list[str | None] = []
    with _flipping(work / "rlink", ("inside/harmless.txt", "/proc/self/environ")):
        for _ in range(ROUNDS // 20):
            texts += await asyncio.gather(*(_call(tools["grep"], pattern="sk-race", path="rlink") for _ in range(20)))
    leaked = [t for t in texts if t is not None and "0123456789" in t]
    count = len(leaked)
    assert count == 0, f"{count} of {len(texts)} searches found the key"
    assert "sk-race-harmless" in "".join(t for t in texts if t is not None), "no search went through"
