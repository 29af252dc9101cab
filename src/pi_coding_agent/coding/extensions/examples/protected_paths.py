"""Refuse writes and edits to protected paths (secrets, VCS internals) without asking.

Protected by default: ``.env`` files (``.env``, ``.env.local`` ...), anything under ``.git/``, and
``node_modules/``. Set ``PI_PROTECTED_PATHS`` to a ``:``-separated list of extra glob patterns
(matched against the path relative to the working directory and against the file name).
"""

from __future__ import annotations

import os
from fnmatch import fnmatchcase
from typing import Any

from pi_coding_agent.ai.types import JsonObject

DEFAULT_PATTERNS = (".env", ".env.*", ".git", ".git/*", "node_modules", "node_modules/*")


def patterns() -> tuple[str, ...]:
    extra = [p for p in os.environ.get("PI_PROTECTED_PATHS", "").split(":") if p]
    return (*DEFAULT_PATTERNS, *extra)


def protected(path: str, cwd: str) -> bool:
    absolute = os.path.realpath(os.path.join(cwd, os.path.expanduser(path)))
    relative = os.path.relpath(absolute, os.path.realpath(cwd))
    parts = relative.split(os.sep)
    candidates = {relative, os.path.basename(absolute)}
    # every leading sub-path, so "sub/.git/config" matches ".git/*" too
    candidates.update("/".join(parts[i:]) for i in range(len(parts)))
    return any(fnmatchcase(c, p) for c in candidates for p in patterns())


def on_tool_call(event: dict[str, Any], ctx: Any) -> JsonObject | None:
    if event["toolName"] not in ("write", "edit"):
        return None
    path = event["input"].get("path")
    if isinstance(path, str) and protected(path, ctx.cwd):
        return {"block": True, "reason": f"Path is protected: {path}"}
    return None


def setup(pi: Any) -> None:
    pi.on("tool_call", on_tool_call)
