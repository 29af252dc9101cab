"""The ``find`` tool: files by glob, via ``rg --files`` with fd's matching rules.

fd is not shipped: ripgrep lists the files (hidden included, .gitignore respected) and the glob is
matched here, as pi's fd call matches it: a pattern without ``/`` matches file names at any depth,
one with ``/`` is anchored at the search directory, and an all-lowercase pattern matches
case-insensitively. (rg's own ``--glob`` cannot be used: it overrides .gitignore.) Directories are
derived from the listed files and reported, like fd, with a trailing ``/`` when they match.
Differences: a directory holding no listed file (empty, or only ignored files) is not reported, and
``.git`` is never descended into.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable
from typing import NotRequired, TypedDict

from pi_coding_agent.agent.tool import ToolError, ToolResult, UpdateCallback, text_result
from pi_coding_agent.ai.abort import AbortSignal

from .base import BuiltinTool, check_aborted
from .declarations import FIND_LIMIT
from .paths import resolve_to_cwd
from .ripgrep import RgRun, require_rg
from .truncate import DEFAULT_MAX_BYTES, listing_result, truncate_head, utf8_len

DEFAULT_LIMIT = FIND_LIMIT
_MAX_SAFE_INTEGER = 2**53 - 1


def _inside_git_repo(path: str) -> bool:
    current = path
    while True:
        if os.path.exists(os.path.join(current, ".git")):
            return True
        parent = os.path.dirname(current)
        if parent == current:
            return False
        current = parent


def _relative_pattern(pattern: str, search_path: str) -> str:
    """The pattern relative to the search directory (``./`` and an absolute root prefix dropped)."""
    while pattern.startswith("./"):
        pattern = pattern[2:]
    root = search_path.rstrip("/") + "/"
    return pattern[len(root) :] if pattern.startswith(root) else pattern


def glob_to_regex(pattern: str) -> str:
    """A glob as a regex over ``/``-separated paths: ``*``/``?`` stay within a segment, ``**`` spans
    segments, ``[...]`` classes and ``{a,b}`` alternatives, backslash escapes."""
    out: list[str] = []
    i, n, depth = 0, len(pattern), 0
    while i < n:
        ch = pattern[i]
        if pattern.startswith("**/", i) and (i == 0 or pattern[i - 1] == "/"):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i) and (i == 0 or pattern[i - 1] == "/") and i + 2 == n:
            out.append(".*")
            i += 2
            continue
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            end = pattern.find("]", i + 2)
            if end == -1:
                out.append(re.escape(ch))
            else:
                body = pattern[i + 1 : end]
                body = "^" + body[1:] if body[0] in "!^" else body
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = end
        elif ch == "{":
            depth += 1
            out.append("(?:")
        elif ch == "}" and depth:
            depth -= 1
            out.append(")")
        elif ch == "," and depth:
            out.append("|")
        elif ch == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


def _with_new_parents(path: str, seen_dirs: set[str]) -> list[str]:
    """``path`` preceded by those of its directories not listed yet (``dir/``), outermost first."""
    parts = path.split("/")
    out = []
    for depth in range(1, len(parts)):
        directory = "/".join(parts[:depth])
        if directory not in seen_dirs:
            seen_dirs.add(directory)
            out.append(directory + "/")
    out.append(path)
    return out


def path_matcher(pattern: str) -> Callable[[str], bool]:
    """Match a relative posix path: by file name when the pattern has no ``/``, else the whole path."""
    on_path = "/" in pattern
    regex = re.compile(glob_to_regex(pattern) + r"\Z", re.IGNORECASE if pattern == pattern.lower() else 0)
    if on_path:
        return lambda path: regex.match(path) is not None
    return lambda path: regex.match(path.rsplit("/", 1)[-1]) is not None


class FindParams(TypedDict):
    pattern: str
    path: NotRequired[str]
    limit: NotRequired[float]


class FindTool(BuiltinTool[FindParams]):
    name = "find"
    # label, description, parameters, prompt lines: declarations.py (BuiltinTool takes them from there)

    async def execute(
        self, tool_call_id: str, params: FindParams, signal: AbortSignal, on_update: UpdateCallback
    ) -> ToolResult:
        check_aborted(signal)
        search_path = resolve_to_cwd(params.get("path") or ".", self.env.cwd)
        sandbox = await self.env.check_read(search_path, recursive=True)
        limit = max(1, math.floor(params.get("limit") or DEFAULT_LIMIT))
        rg = require_rg(self.env.agent_dir)
        if not os.path.isdir(search_path):
            raise ToolError(f"Path not found: {search_path}")
        matches = path_matcher(_relative_pattern(params["pattern"], search_path))
        args = [rg, "--no-config", "--files", "--hidden", "--color=never", "--sort=path", "--glob", "!.git"]
        if not _inside_git_repo(search_path):
            args.append("--no-require-git")
        run = RgRun(args, search_path, signal, sandbox)
        stored: list[str] = []
        count = size = 0
        limit_reached = False
        seen_dirs: set[str] = set()
        async for raw in run.lines():
            line = raw.decode("utf-8", "replace").rstrip("\r\n").strip()
            path = line[2:] if line.startswith("./") else line
            for result in _with_new_parents(path, seen_dirs) if path else ():
                if not matches(result.rstrip("/")):
                    continue
                if count == limit:
                    limit_reached = True
                    break
                count += 1
                if size - 1 <= DEFAULT_MAX_BYTES:
                    stored.append(result)
                size += utf8_len(result) + 1
            if limit_reached:
                run.stop()
                break
        code = run.returncode
        if not run.stopped and code not in (0, 1) and count == 0:
            raise ToolError(run.stderr.decode("utf-8", "replace").strip() or f"ripgrep exited with code {code}")
        if count == 0:
            return text_result("No files found matching pattern")
        truncation = truncate_head("\n".join(stored), max_lines=_MAX_SAFE_INTEGER)
        truncation["totalLines"] = count
        truncation["totalBytes"] = size - 1
        notice = f"{limit} results limit reached. Use limit={limit * 2} for more, or refine pattern"
        return listing_result(truncation, notice if limit_reached else None, ("resultLimitReached", limit))
