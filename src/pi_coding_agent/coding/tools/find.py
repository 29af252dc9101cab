"""The ``find`` tool: files by glob, via ``rg --files`` with fd's matching rules.

fd is not shipped, so ripgrep lists the files and its glob overrides do the matching. rg's
gitignore-style globs already behave like pi's fd call: a pattern without ``/`` matches file names at
any depth, one with ``/`` is anchored at the search directory, and an all-lowercase pattern matches
case-insensitively (``--iglob``). Difference: only files are listed (fd also lists matching
directories with a trailing ``/``), and ``.git`` is never descended into.
"""

from __future__ import annotations

import math
import os
from typing import Any

from pi_coding_agent.agent.tool import ToolError, ToolResult, UpdateCallback, text_result
from pi_coding_agent.ai.abort import AbortSignal

from .base import BuiltinTool, check_aborted, number_param, object_schema, string_param
from .paths import resolve_to_cwd
from .ripgrep import RgRun, require_rg
from .truncate import DEFAULT_MAX_BYTES, format_size, truncate_head, utf8_len

DEFAULT_LIMIT = 1000
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


def _rg_glob(pattern: str, search_path: str) -> str:
    """The user's pattern as an rg override glob rooted at the search directory."""
    while pattern.startswith("./"):
        pattern = pattern[2:]
    root = search_path.rstrip("/") + "/"
    if pattern.startswith(root):
        pattern = pattern[len(root) :]
    # fd has no negation; a leading "!" is a literal character.
    return "\\" + pattern if pattern.startswith("!") else pattern


class FindTool(BuiltinTool):
    name = "find"
    label = "find"
    description = (
        "Find files by glob pattern and return their paths relative to the search directory. Files ignored "
        f"by .gitignore are skipped. At most {DEFAULT_LIMIT} results or {DEFAULT_MAX_BYTES // 1024}KB are "
        "returned (whichever comes first)."
    )
    parameters = object_schema(
        {
            "pattern": string_param(
                "Glob relative to the search directory, e.g. 'src/**/*.ts'. A pattern without '/', such as "
                "'*.ts', matches file names at any depth"
            ),
            "path": string_param("Directory to search (defaults to the working directory)"),
            "limit": number_param(f"Maximum number of results (default: {DEFAULT_LIMIT})"),
        },
        ["pattern"],
    )
    prompt_snippet = "Find files by glob pattern (respects .gitignore)"

    async def execute(
        self, tool_call_id: str, params: dict[str, Any], signal: AbortSignal, on_update: UpdateCallback
    ) -> ToolResult:
        check_aborted(signal)
        search_path = resolve_to_cwd(params.get("path") or ".", self.env.cwd)
        limit = max(1, math.floor(params.get("limit") or DEFAULT_LIMIT))
        rg = require_rg(self.env.agent_dir)
        if not os.path.isdir(search_path):
            raise ToolError(f"Path not found: {search_path}")
        pattern: str = params["pattern"]
        glob_flag = "--iglob" if pattern == pattern.lower() else "--glob"
        args = [rg, "--no-config", "--files", "--hidden", "--color=never", "--sort=path"]
        if not _inside_git_repo(search_path):
            args.append("--no-require-git")
        args += ["--glob", "!.git", glob_flag, _rg_glob(pattern, search_path)]
        run = RgRun(args, search_path, signal)
        stored: list[str] = []
        count = size = 0
        limit_reached = False
        async for raw in run.lines():
            line = raw.decode("utf-8", "replace").rstrip("\r\n").strip()
            if not line:
                continue
            if count == limit:
                limit_reached = True
                run.stop()
                break
            count += 1
            result = line[2:] if line.startswith("./") else line
            if size - 1 <= DEFAULT_MAX_BYTES:
                stored.append(result)
            size += utf8_len(result) + 1
        code = run.returncode
        if not run.stopped and code not in (0, 1) and count == 0:
            raise ToolError(run.stderr.decode("utf-8", "replace").strip() or f"ripgrep exited with code {code}")
        if count == 0:
            return text_result("No files found matching pattern")
        truncation = truncate_head("\n".join(stored), max_lines=_MAX_SAFE_INTEGER)
        truncation["totalLines"] = count
        truncation["totalBytes"] = size - 1
        text = truncation["content"]
        details: dict[str, Any] = {}
        notices: list[str] = []
        if limit_reached:
            notices.append(f"{limit} results limit reached. Use limit={limit * 2} for more, or refine pattern")
            details["resultLimitReached"] = limit
        if truncation["truncated"]:
            notices.append(f"{format_size(DEFAULT_MAX_BYTES)} limit reached")
            details["truncation"] = truncation
        if notices:
            text += "\n\n[" + ". ".join(notices) + "]"
        return text_result(text, details or None)
