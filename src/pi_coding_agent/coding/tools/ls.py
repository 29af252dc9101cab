"""The ``ls`` tool: one directory's entries, sorted case-insensitively, directories with ``/``."""

from __future__ import annotations

import math
import os
import stat
from typing import NotRequired, TypedDict

from pi_coding_agent.agent.tool import ToolError, ToolResult, UpdateCallback, text_result
from pi_coding_agent.ai.abort import AbortSignal

from .base import BuiltinTool, check_aborted
from .declarations import LS_LIMIT
from .paths import node_error_message, resolve_to_cwd
from .truncate import listing_result, truncate_head

DEFAULT_LIMIT = LS_LIMIT
_MAX_SAFE_INTEGER = 2**53 - 1


def _collation_key(name: str) -> tuple[tuple[int, str], ...]:
    """Approximates locale order of lowercased names: punctuation, then digits, then letters."""
    import unicodedata  # a 1 MB extension module: mapped by the first listing, not at start-up

    def rank(ch: str) -> tuple[int, str]:
        if ch.isalpha():
            return (2, ch)
        if ch.isdigit():
            return (1, ch)
        return (0, unicodedata.category(ch) + ch)

    return tuple(rank(ch) for ch in name.lower())


class LsParams(TypedDict):
    path: NotRequired[str]
    limit: NotRequired[float]


class LsTool(BuiltinTool[LsParams]):
    name = "ls"
    # label, description, parameters, prompt lines: declarations.py (BuiltinTool takes them from there)

    async def execute(
        self, tool_call_id: str, params: LsParams, signal: AbortSignal, on_update: UpdateCallback
    ) -> ToolResult:
        check_aborted(signal)
        path = resolve_to_cwd(params.get("path") or ".", self.env.cwd)
        await self.env.check_read(path)
        limit = max(1, math.floor(params.get("limit") or DEFAULT_LIMIT))
        try:
            mode = os.stat(path).st_mode
        except OSError:
            raise ToolError(f"Path not found: {path}") from None
        if not stat.S_ISDIR(mode):
            raise ToolError(f"Not a directory: {path}")
        try:
            entries = sorted(os.listdir(path), key=_collation_key)
        except OSError as exc:
            raise ToolError(f"Cannot read directory: {node_error_message(exc, 'scandir', path)}") from None
        results: list[str] = []
        limit_reached = False
        for entry in entries:
            if len(results) >= limit:
                limit_reached = True
                break
            try:
                is_dir = stat.S_ISDIR(os.stat(os.path.join(path, entry)).st_mode)
            except OSError:
                continue
            results.append(entry + "/" if is_dir else entry)
        if not results:
            return text_result("(empty directory)")
        truncation = truncate_head("\n".join(results), max_lines=_MAX_SAFE_INTEGER)
        notice = f"{limit} entries limit reached. Use limit={limit * 2} for more"
        return listing_result(truncation, notice if limit_reached else None, ("entryLimitReached", limit))
