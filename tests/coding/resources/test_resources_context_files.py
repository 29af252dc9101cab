"""Context-file discovery: candidates, order, BOM, duplicates, worktree shadowing."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pi_coding_agent.coding.resources.context_files import load_context_files


def put(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_agent_dir_first_then_root_most_to_cwd(tmp_path: Path) -> None:
    agent = put(tmp_path / "agent" / "AGENTS.md", "global")
    root = put(tmp_path / "p" / "AGENTS.md", "root")
    claude = put(tmp_path / "p" / "a" / "CLAUDE.md", "claude")
    override = put(tmp_path / "p" / "a" / "b" / "AGENTS.override.md", "override")
    put(tmp_path / "p" / "a" / "b" / "AGENTS.md", "shadowed by override")
    files = load_context_files(tmp_path / "agent", tmp_path / "p" / "a" / "b")
    assert files == [(agent, "global"), (root, "root"), (claude, "claude"), (override, "override")]


@pytest.mark.parametrize("winner", ["AGENTS.md", "AGENTS.MD", "CLAUDE.md", "CLAUDE.MD"])
def test_candidate_priority(tmp_path: Path, winner: str) -> None:
    names = ["AGENTS.md", "AGENTS.MD", "CLAUDE.md", "CLAUDE.MD"]
    cwd = tmp_path / "p"
    for name in names[names.index(winner):]:
        put(cwd / name, name)
    if (cwd / "agents.md").exists() or (cwd / "claude.md").exists():
        pytest.skip("case-insensitive filesystem")
    files = [(p.name, t) for p, t in load_context_files(tmp_path / "agent", cwd) if p.parent == cwd]
    assert files == [(winner, winner)]


def test_directory_named_like_a_context_file_is_skipped_and_bom_stripped(tmp_path: Path) -> None:
    cwd = tmp_path / "p"
    (cwd / "AGENTS.md").mkdir(parents=True)
    claude = cwd / "CLAUDE.md"
    claude.write_bytes(b"\xef\xbb\xbfhello\n")
    assert load_context_files(tmp_path / "agent", cwd) == [(claude, "hello\n")]


def test_agent_dir_file_is_not_loaded_twice(tmp_path: Path) -> None:
    agent_dir = tmp_path / "p" / "agent"
    agent = put(agent_dir / "AGENTS.md", "global")
    root = put(tmp_path / "p" / "AGENTS.md", "root")
    assert load_context_files(agent_dir, agent_dir) == [(agent, "global"), (root, "root")]


def test_no_files(tmp_path: Path) -> None:
    assert load_context_files(tmp_path / "agent", tmp_path) == []


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def test_nested_linked_worktree_shadows_the_main_checkout_file(tmp_path: Path) -> None:
    main = tmp_path / "repo"
    main.mkdir()
    git(main, "init", "-q")
    put(main / "AGENTS.md", "main copy")
    git(main, "add", "AGENTS.md")
    git(main, "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "x")
    git(main, "worktree", "add", "-q", str(main / "wt"))
    files = load_context_files(tmp_path / "agent", main / "wt")
    assert files == [(main / "wt" / "AGENTS.md", "main copy")]
    assert load_context_files(tmp_path / "agent", main) == [(main / "AGENTS.md", "main copy")]
