"""Which tools start active: ``defaultTools`` changed by ``--tools`` and ``--no-tools``."""

from __future__ import annotations

import re
from collections.abc import Callable

from pi_coding_agent.agent.tool import AgentTool


class ToolSelectionError(ValueError):
    """An invalid ``--tools`` list (pi's wording, to be prefixed with the flag name)."""


def parse_tools_flag(value: str) -> list[str]:
    return [entry.strip() for entry in value.split(",") if entry.strip()]


def _is_modifier(entry: str) -> bool:
    return entry.startswith(("+", "-"))


def tool_list_error(entries: list[str]) -> str | None:
    """A list is either names/patterns or only ``+name``/``-name`` modifiers with exact names."""
    modifiers = [e for e in entries if _is_modifier(e)]
    if not modifiers:
        return None
    if len(modifiers) < len(entries):
        return "tool names cannot be mixed with +name or -name entries"
    pattern = next((e for e in modifiers if "*" in e), None)
    if pattern is not None:
        return f"+name and -name entries take exact tool names, not patterns: {pattern}"
    return None


def apply_modifiers(base: list[str], entries: list[str]) -> list[str]:
    """``+name`` appends a tool not yet listed, ``-name`` removes one; in the order given."""
    tools = list(base)
    for entry in entries:
        name = entry[1:]
        if entry.startswith("+") and name and name not in tools:
            tools.append(name)
        elif entry.startswith("-") and name in tools:
            tools.remove(name)
    return tools


def name_matcher(entries: list[str]) -> Callable[[str], bool]:
    """Exact names, or patterns where ``*`` matches any characters."""
    names = {e for e in entries if "*" not in e}
    patterns = [re.compile("^" + ".*".join(re.escape(p) for p in e.split("*")) + "$") for e in entries if "*" in e]
    return lambda name: name in names or any(p.match(name) for p in patterns)


def select_tools(
    all_tools: dict[str, AgentTool], default_tools: list[str], tools_flag: str | None, no_tools: bool
) -> list[AgentTool]:
    """The initially active tools, in the order the names were given.

    ``--tools`` is an allowlist of names and ``*``-patterns (patterns expand in registry order), or
    a pure ``+name``/``-name`` list applied to the defaults. ``--no-tools`` starts from nothing.
    Raises :class:`ToolSelectionError` for a mixed list.
    """
    base = [] if no_tools else list(default_tools)
    if tools_flag is None:
        names = base
    else:
        entries = parse_tools_flag(tools_flag)
        error = tool_list_error(entries)
        if error is not None:
            raise ToolSelectionError(error)
        if any(_is_modifier(e) for e in entries):
            names = apply_modifiers(base, entries)
        else:
            names = []
            for entry in entries:
                matches = [entry] if "*" not in entry else [n for n in all_tools if name_matcher([entry])(n)]
                names.extend(n for n in matches if n not in names)
    return [all_tools[n] for n in names if n in all_tools]
