"""The ``grep`` tool: ``rg --json`` matches as ``path:line: text`` with context and caps."""

from __future__ import annotations

import math
import os
import stat
from typing import NotRequired, TypedDict

from pi_coding_agent.agent.tool import ToolError, ToolResult, UpdateCallback, text_result
from pi_coding_agent.ai.abort import AbortSignal

from .base import BuiltinTool, check_aborted
from .declarations import GREP_LIMIT
from .paths import resolve_to_cwd
from .ripgrep import RgRun, require_rg
from .truncate import (
    DEFAULT_MAX_BYTES,
    GREP_MAX_LINE_LENGTH,
    listing_result,
    truncate_head,
    truncate_line,
    utf8_len,
)

DEFAULT_LIMIT = GREP_LIMIT
_MAX_SAFE_INTEGER = 2**53 - 1


def _rg_text(data: object) -> str:
    """A ripgrep JSON text field; non-UTF-8 data arrives base64-encoded under ``bytes``."""
    if isinstance(data, dict):
        if isinstance(data.get("text"), str):
            return data["text"]
        if isinstance(data.get("bytes"), str):
            import base64  # rare: loaded by the first non-UTF-8 match, not at start-up

            return base64.b64decode(data["bytes"]).decode("utf-8", "replace")
    return ""


def _strip_terminator(text: str) -> str:
    if text.endswith("\n"):
        text = text[:-1]
        if text.endswith("\r"):
            text = text[:-1]
    return text


def _glob_arg(glob: str) -> str:
    """rg never matches a leading ``./``; keep a leading ``!`` (negation)."""
    neg = "!" if glob.startswith("!") else ""
    rest = glob[len(neg) :]
    while rest.startswith("./"):
        rest = rest[2:]
    return neg + rest


class _Collector:
    """Formats events into lines; counts past the byte cap without storing."""

    def __init__(self, search_path: str, is_dir: bool) -> None:
        self.search_path = search_path
        self.is_dir = is_dir
        self.lines: list[str] = []
        self.bytes = 0
        self.count = 0
        self.lines_truncated = False
        self.last_file: str | None = None

    def rel(self, file_path: str) -> str:
        if self.is_dir:
            rel = os.path.relpath(os.path.join(self.search_path, file_path), self.search_path)
            if rel and rel != "." and not rel.startswith(".."):
                return rel.replace(os.sep, "/")
        return os.path.basename(file_path)

    def push(self, file_path: str, line_no: int, text: str, is_match: bool) -> None:
        self.last_file = file_path
        shown, cut = truncate_line(_strip_terminator(text))
        self.lines_truncated = self.lines_truncated or cut
        sep = ":" if is_match else "-"
        line = f"{self.rel(file_path)}{sep}{line_no}{sep} {shown}"
        if self.bytes - 1 <= DEFAULT_MAX_BYTES:
            self.lines.append(line)
        self.bytes += utf8_len(line) + 1
        self.count += 1


class GrepParams(TypedDict):
    pattern: str
    path: NotRequired[str]
    glob: NotRequired[str]
    ignoreCase: NotRequired[bool]
    literal: NotRequired[bool]
    context: NotRequired[float]
    limit: NotRequired[float]


class GrepTool(BuiltinTool[GrepParams]):
    name = "grep"
    # label, description, parameters, prompt lines: declarations.py (BuiltinTool takes them from there)

    async def execute(
        self, tool_call_id: str, params: GrepParams, signal: AbortSignal, on_update: UpdateCallback
    ) -> ToolResult:
        check_aborted(signal)
        rg = require_rg(self.env.agent_dir)
        search_path = resolve_to_cwd(params.get("path") or ".", self.env.cwd)
        sandbox = await self.env.check_read(search_path, recursive=True)
        try:
            is_dir = stat.S_ISDIR(os.stat(search_path).st_mode)
        except OSError:
            raise ToolError(f"Path not found: {search_path}") from None
        raw_context = params.get("context")
        context = min(math.floor(raw_context), _MAX_SAFE_INTEGER) if raw_context and raw_context > 0 else 0
        limit = max(1, math.floor(params.get("limit") or DEFAULT_LIMIT))
        args = [rg, "--no-config", "--json", "--line-number", "--color=never", "--hidden"]
        if params.get("ignoreCase"):
            args.append("--ignore-case")
        if params.get("literal"):
            args.append("--fixed-strings")
        if params.get("glob"):
            args += ["--glob", _glob_arg(params["glob"])]
        if context > 0:
            args += ["--context", str(context)]
        args += ["--", params["pattern"], "." if is_dir else search_path]
        run = RgRun(args, search_path if is_dir else None, signal, sandbox)
        out = _Collector(search_path, is_dir)
        matches, limit_hit, limit_reached, trailing_end = 0, False, False, 0
        import orjson

        async for raw in run.lines():
            try:
                event = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue
            kind = event.get("type")
            if kind not in ("match", "context"):
                continue
            data = event.get("data") or {}
            file_path, line_no = _rg_text(data.get("path")), data.get("line_number")
            if not file_path or not isinstance(line_no, int):
                continue
            text = _rg_text(data.get("lines"))
            is_match = kind == "match"
            if not limit_hit:
                out.push(file_path, line_no, text, is_match)
                if is_match:
                    matches += 1
                    if matches >= limit:
                        limit_hit, trailing_end = True, line_no + context
                continue
            # Past the limit: keep the last match's trailing context; another match proves the cut.
            in_window = file_path == out.last_file and line_no <= trailing_end
            if in_window:
                out.push(file_path, line_no, text, False)
            limit_reached = limit_reached or is_match
            if limit_reached and not (in_window and line_no < trailing_end):
                run.stop()
        code = run.returncode
        if not run.stopped and code not in (0, 1):
            raise ToolError(run.stderr.decode("utf-8", "replace").strip() or f"ripgrep exited with code {code}")
        if matches == 0:
            return text_result("No matches found")
        return _format(out, limit, limit_reached)


def _format(out: _Collector, limit: int, limit_reached: bool) -> ToolResult:
    truncation = truncate_head("\n".join(out.lines), max_lines=_MAX_SAFE_INTEGER)
    truncation["totalLines"] = out.count
    truncation["totalBytes"] = out.bytes - 1
    notice = f"{limit} matches limit reached. Use limit={limit * 2} for more, or refine pattern"
    extra = (f"Some lines truncated to {GREP_MAX_LINE_LENGTH} chars. Use read tool to see full lines", "linesTruncated")
    return listing_result(truncation, notice if limit_reached else None, ("matchLimitReached", limit),
                          extra if out.lines_truncated else None)
