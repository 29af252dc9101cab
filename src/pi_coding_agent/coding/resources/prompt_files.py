"""The files a system prompt is made of, found at start-up: ``--system-prompt`` / ``SYSTEM.md`` and
``--append-system-prompt`` / ``APPEND_SYSTEM.md`` (the prompt itself is built by ``system_prompt``,
with the first prompt)."""

from __future__ import annotations

import sys
from pathlib import Path

from pi_coding_agent.coding.resources.frontmatter import BOM
from pi_coding_agent.coding.resources.settings import PROJECT_DIR


def read_prompt_input(value: str, what: str) -> str:
    """A ``--system-prompt``-style value: the file's text when it names a file, else the text itself."""
    path = Path(value).expanduser()
    try:
        if path.exists():
            return path.read_text(encoding="utf-8").removeprefix(BOM)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        print(f"Warning: Could not read {what} file {value}: {exc}", file=sys.stderr)
    return value


def _discovered_file(name: str, agent_dir: Path, cwd: Path, trusted: bool) -> Path | None:
    """``<cwd>/.pi/<name>`` when trusted, else ``<agentDir>/<name>``, if it exists."""
    candidates = ([cwd / PROJECT_DIR / name] if trusted else []) + [agent_dir / name]
    return next((c for c in candidates if c.exists()), None)


def resolve_custom_prompt(arg: str | None, agent_dir: Path, cwd: Path, trusted: bool) -> str | None:
    """``--system-prompt`` (text or file), else ``.pi/SYSTEM.md`` (trusted), else ``<agentDir>/SYSTEM.md``."""
    source = arg if arg else _discovered_file("SYSTEM.md", agent_dir, cwd, trusted)
    return read_prompt_input(str(source), "system prompt") if source else None


def resolve_append_prompts(args: list[str], agent_dir: Path, cwd: Path, trusted: bool) -> list[str]:
    """``--append-system-prompt`` values, else the discovered ``APPEND_SYSTEM.md``."""
    if not args:
        found = _discovered_file("APPEND_SYSTEM.md", agent_dir, cwd, trusted)
        args = [str(found)] if found else []
    return [read_prompt_input(a, "append system prompt") for a in args]
