"""Context files (AGENTS.md and friends) that go into the ``project_context`` prompt section.

One file per directory, the first existing regular file among ``CONTEXT_FILE_NAMES``. The agent
dir's file comes first, then the directories from ``/`` down to the cwd (closest last). They load
whether or not the project is trusted.
"""

from __future__ import annotations

import sys
from pathlib import Path

from pi_coding_agent.coding.resources.frontmatter import BOM

CONTEXT_FILE_NAMES = ("AGENTS.override.md", "AGENTS.md", "AGENTS.MD", "CLAUDE.md", "CLAUDE.MD")


def load_context_files(agent_dir: Path, cwd: Path) -> list[tuple[Path, str]]:
    """(absolute path, content without BOM) in prompt order (see module docstring)."""
    files: list[tuple[Path, str]] = []
    seen: set[Path] = set()
    global_file = context_file_in(agent_dir.absolute())
    if global_file is not None:
        files.append(global_file)
        seen.add(global_file[0])
    shadowed = shadowed_context_file(cwd)
    ancestors: list[tuple[Path, str]] = []
    current = cwd.absolute()
    for directory in (current, *current.parents):
        found = context_file_in(directory)
        if found is None or found[0] in seen:
            continue
        if shadowed is not None and _real(directory) / found[0].name == shadowed:
            continue
        ancestors.append(found)
        seen.add(found[0])
    files.extend(reversed(ancestors))
    return files


def context_file_in(directory: Path) -> tuple[Path, str] | None:
    """The directory's context file and its text, or None."""
    for name in CONTEXT_FILE_NAMES:
        path = directory / name
        if not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            print(f"Warning: Could not read {path}: {exc}", file=sys.stderr)
            continue
        return path, text.removeprefix(BOM)
    return None


def _real(path: Path) -> Path:
    try:
        return path.resolve()
    except OSError:
        return path


def shadowed_context_file(cwd: Path) -> Path | None:
    """In a linked git worktree nested inside its main checkout, the main checkout's context file.

    The worktree carries its own copy of the same file; loading both would apply it twice. Only a
    worktree whose main repository root is an ancestor (and is a normal checkout) shadows anything.
    """
    found = _git_dirs(cwd)
    if found is None:
        return None
    worktree_root, common_dir = _real(found[0]), _real(found[1])
    main_root = common_dir.parent
    if worktree_root == main_root or main_root not in worktree_root.parents:
        return None
    if _real(main_root / ".git") != common_dir:
        return None
    own = context_file_in(worktree_root)
    return main_root / own[0].name if own is not None else None


def _git_dirs(cwd: Path) -> tuple[Path, Path] | None:
    """(worktree root, common git dir) for the repository containing ``cwd``, or None."""
    current = cwd.absolute()
    for directory in (current, *current.parents):
        marker = directory / ".git"
        if marker.is_dir():
            return directory, marker
        if marker.is_file():
            return directory, _common_dir_of(marker, directory)
    return None


def _common_dir_of(marker: Path, directory: Path) -> Path:
    """Follow a ``.git`` file's ``gitdir:`` line and the git dir's ``commondir`` file."""
    try:
        text = marker.read_text(encoding="utf-8").strip()
    except OSError:
        return marker
    if not text.startswith("gitdir:"):
        return marker
    git_dir = (directory / text[len("gitdir:"):].strip()).absolute()
    try:
        common = (git_dir / "commondir").read_text(encoding="utf-8").strip()
    except OSError:
        return git_dir
    return (git_dir / common).absolute()
