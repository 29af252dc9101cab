"""Ask before risky tool calls: dangerous bash commands, and writes or edits outside the working directory.

Refusing, or not answering before the timeout, blocks the call; the model sees the reason. Without a
UI (print and JSON modes) nobody can approve, so risky calls are blocked.
"""

from __future__ import annotations

import os
import re
from typing import Any

from pi_coding_agent.ai.types import JsonObject

CONFIRM_TIMEOUT_MS = 60_000

DANGEROUS_COMMANDS = (
    (re.compile(r"\brm\s+(-[a-zA-Z]*[rR][a-zA-Z]*f|-[a-zA-Z]*f[a-zA-Z]*[rR]|--recursive\s+--force|--force\s+--recursive)\b"),
     "recursive forced delete"),
    (re.compile(r"(^|[;&|]\s*|\s)sudo\s"), "runs as root"),
    (re.compile(r"\bchmod\s+(-R\s+)?0?777\b"), "world-writable permissions"),
    (re.compile(r"\bmkfs(\.\w+)?\b|\bdd\s+.*\bof=/dev/"), "writes a device"),
    (re.compile(r">\s*/dev/sd[a-z]"), "writes a device"),
)


def dangerous_reason(command: str) -> str | None:
    """Why ``command`` needs approval, or None."""
    for pattern, reason in DANGEROUS_COMMANDS:
        if pattern.search(command):
            return reason
    return None


def outside_cwd(path: str, cwd: str) -> bool:
    """True when ``path`` (relative to ``cwd``, ``~`` expanded) resolves outside ``cwd``."""
    target = os.path.realpath(os.path.join(cwd, os.path.expanduser(path)))
    root = os.path.realpath(cwd)
    return os.path.commonpath([target, root]) != root


def risk(event: dict[str, Any], cwd: str) -> str | None:
    tool, args = event["toolName"], event["input"]
    if tool == "bash":
        reason = dangerous_reason(str(args.get("command", "")))
        return f"{reason}: {args.get('command')}" if reason else None
    if tool in ("write", "edit") and isinstance(args.get("path"), str) and outside_cwd(args["path"], cwd):
        return f"{tool} outside the working directory: {args['path']}"
    return None


async def on_tool_call(event: dict[str, Any], ctx: Any) -> JsonObject | None:
    why = risk(event, ctx.cwd)
    if why is None:
        return None
    if not ctx.has_ui:
        return {"block": True, "reason": f"Blocked ({why}): no user interface to approve it"}
    allowed = await ctx.ui.confirm("Allow this tool call?", why, timeout_ms=CONFIRM_TIMEOUT_MS)
    if allowed:
        return None
    return {"block": True, "reason": f"Blocked by the user ({why})"}


def setup(pi: Any) -> None:
    pi.on("tool_call", on_tool_call)
