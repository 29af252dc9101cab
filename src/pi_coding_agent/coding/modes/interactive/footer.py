"""The footer's two lines, computed from the session alone (no widget code, so tests read them directly).

Line one: the working directory (``~`` for home), the git branch in parentheses and the session
name. Line two: token totals (``↑`` in, ``↓`` out, ``R``/``W`` cache), the cost, context use
against the window, and at the right the model with its thinking level.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.cells import cell_len, set_cell_size

if TYPE_CHECKING:
    from pi_coding_agent.ai.types import Model
    from pi_coding_agent.coding.agent_session import AgentSession


def short_count(count: int) -> str:
    """1234 -> ``1.2k``, 200000 -> ``200k``, 1500000 -> ``1.5M`` (the footer has little room)."""
    if count < 1000:
        return str(count)
    if count < 1_000_000:
        value, unit = count / 1000, "k"
    else:
        value, unit = count / 1_000_000, "M"
    return f"{value:.0f}{unit}" if value >= 10 or value == int(value) else f"{value:.1f}{unit}"


def home_relative(path: str) -> str:
    home = os.path.expanduser("~")
    if home and home != "/" and (path == home or path.startswith(home + os.sep)):
        return "~" + path[len(home):]
    return path


def git_branch(cwd: str) -> str | None:
    """The branch named by ``.git/HEAD`` of ``cwd`` or a parent (a short hash when detached)."""
    directory = Path(cwd)
    for candidate in (directory, *directory.parents):
        git = candidate / ".git"
        if git.is_file():  # a worktree: "gitdir: <path>"
            try:
                git = Path(git.read_text().split(":", 1)[1].strip())
            except (OSError, IndexError):
                return None
        head = git / "HEAD"
        if head.is_file():
            try:
                text = head.read_text().strip()
            except OSError:
                return None
            return text.removeprefix("ref: refs/heads/") if text.startswith("ref:") else text[:7]
    return None


def location_line(cwd: str, session_name: str | None, branch: str | None) -> str:
    line = home_relative(cwd)
    if branch:
        line += f" ({branch})"
    if session_name:
        line += f" • {session_name}"
    return line


def usage_line(stats: dict[str, Any], context: dict[str, Any] | None, auto_compact: bool) -> str:
    """Totals and context use; parts with nothing to say are left out."""
    tokens = stats.get("tokens") or {}
    parts = []
    for key, mark in (("input", "↑"), ("output", "↓"), ("cacheRead", "R"), ("cacheWrite", "W")):
        if tokens.get(key):
            parts.append(f"{mark}{short_count(int(tokens[key]))}")
    cost = float(stats.get("cost") or 0)
    if cost:
        parts.append(f"${cost:.3f}")
    if context is not None:
        window = short_count(int(context.get("contextWindow") or 0))
        percent = context.get("percent")
        shown = "?" if percent is None else f"{percent:.1f}%"
        parts.append(f"{shown}/{window}" + (" (auto)" if auto_compact else ""))
    return " ".join(parts)


def model_label(model: Model | dict[str, Any], thinking_level: str) -> str:
    label = str(model.get("id", "no model"))
    if model.get("reasoning"):
        label += f" • {thinking_level}" if thinking_level != "off" else " • thinking off"
    return label


def footer_lines(session: AgentSession, branch: str | None) -> tuple[str, str, str]:
    """(location, usage, model) for the current state of ``session``."""
    stats = session.sm.stats()
    context = session.context_usage()
    location = location_line(str(session.rt.cwd), session.sm.session_name, branch)
    usage = usage_line(stats, context, session.rt.auto_compaction_enabled)
    return location, usage, model_label(session.agent.model, session.agent.thinking_level)


def _cut(text: str, width: int, ellipsis: str) -> str:
    """``text`` in ``width`` cells, its end replaced by ``ellipsis`` when it is longer."""
    if cell_len(text) <= width:
        return text
    return set_cell_size(text, max(width - len(ellipsis), 0)) + ellipsis[:width]


def fit_footer(location: str, usage: str, model: str, width: int) -> str:
    """The footer's two rows in ``width`` cells, as pi fits them: each row cut with "...", the model
    right-aligned two cells or more after the usage, cut short, or left out when there is no room."""
    usage = _cut(usage, width, "...")
    room = width - cell_len(usage) - 2
    model = set_cell_size(model, room).rstrip() if 0 < room < cell_len(model) else model if room > 0 else ""
    gap = " " * max(width - cell_len(usage) - cell_len(model), 0) if model else ""
    return f"{_cut(location, width, '...')}\n{usage}{gap}{model}"
