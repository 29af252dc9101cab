"""Output caps shared by the tools: head truncation (read, grep, find, ls), tail truncation (bash).

The metadata dict is pi's ``details.truncation`` object, so its keys are the wire names.
"""

from __future__ import annotations

from typing import Literal, TypedDict

from pi_coding_agent.agent.tool import ToolResult, text_result
from pi_coding_agent.ai.types import JsonObject

from .declarations import DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, GREP_MAX_LINE_LENGTH


class Truncation(TypedDict):
    content: str
    truncated: bool
    truncatedBy: Literal["lines", "bytes"] | None
    totalLines: int
    totalBytes: int
    outputLines: int
    outputBytes: int
    lastLinePartial: bool
    firstLineExceedsLimit: bool
    maxLines: int
    maxBytes: int


def utf8_len(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def format_size(size: int) -> str:
    """``<n>B``, ``<x.x>KB`` or ``<x.x>MB`` with 1024-based units, as pi prints sizes."""
    if size < 1024:
        return f"{size}B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f}KB"
    return f"{size / (1024 * 1024):.1f}MB"


def js_number(value: float) -> str:
    """A number as JavaScript's template strings print it (``2`` not ``2.0``, ``1e+300`` not 301 digits)."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return str(value)


def split_counted_lines(content: str) -> list[str]:
    """Lines as the caps count them: one trailing newline does not start another line."""
    if not content:
        return []
    lines = content.split("\n")
    if content.endswith("\n"):
        lines.pop()
    return lines


def _result(
    content: str,
    truncated: bool,
    by: Literal["lines", "bytes"] | None,
    total_lines: int,
    total_bytes: int,
    output_lines: int,
    max_lines: int,
    max_bytes: int,
    last_line_partial: bool = False,
    first_line_exceeds: bool = False,
) -> Truncation:
    return {
        "content": content,
        "truncated": truncated,
        "truncatedBy": by,
        "totalLines": total_lines,
        "totalBytes": total_bytes,
        "outputLines": output_lines,
        "outputBytes": utf8_len(content),
        "lastLinePartial": last_line_partial,
        "firstLineExceedsLimit": first_line_exceeds,
        "maxLines": max_lines,
        "maxBytes": max_bytes,
    }


def _measure(content: str, max_lines: int, max_bytes: int) -> tuple[list[str], int, Truncation | None]:
    """Lines and byte size of ``content``, and the untruncated result when it fits both caps."""
    total_bytes = utf8_len(content)
    lines = split_counted_lines(content)
    total = len(lines)
    fits = total <= max_lines and total_bytes <= max_bytes
    whole = _result(content, False, None, total, total_bytes, total, max_lines, max_bytes) if fits else None
    return lines, total_bytes, whole


def truncate_head(
    content: str, max_lines: int = DEFAULT_MAX_LINES, max_bytes: int = DEFAULT_MAX_BYTES
) -> Truncation:
    """Keep whole lines from the start; a first line over the byte cap keeps nothing."""
    lines, total_bytes, whole = _measure(content, max_lines, max_bytes)
    if whole is not None:
        return whole
    total = len(lines)
    if utf8_len(lines[0]) > max_bytes:
        return _result("", True, "bytes", total, total_bytes, 0, max_lines, max_bytes, first_line_exceeds=True)
    kept: list[str] = []
    used = 0
    by: Literal["lines", "bytes"] = "lines"
    for line in lines[:max_lines]:
        size = utf8_len(line) + (1 if kept else 0)
        if used + size > max_bytes:
            by = "bytes"
            break
        kept.append(line)
        used += size
    if len(kept) >= max_lines and used <= max_bytes:
        by = "lines"
    return _result("\n".join(kept), True, by, total, total_bytes, len(kept), max_lines, max_bytes)


def _tail_of_bytes(text: str, max_bytes: int) -> str:
    """The last ``max_bytes`` of ``text``, starting on a UTF-8 character boundary."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= max_bytes:
        return text
    start = len(data) - max_bytes
    while start < len(data) and (data[start] & 0xC0) == 0x80:
        start += 1
    return data[start:].decode("utf-8", "replace")


def truncate_tail(
    content: str, max_lines: int = DEFAULT_MAX_LINES, max_bytes: int = DEFAULT_MAX_BYTES
) -> Truncation:
    """Keep whole lines from the end; a last line over the byte cap keeps its final bytes."""
    lines, total_bytes, whole = _measure(content, max_lines, max_bytes)
    if whole is not None:
        return whole
    total = len(lines)
    kept: list[str] = []
    used = 0
    by: Literal["lines", "bytes"] = "lines"
    partial = False
    for line in reversed(lines):
        if len(kept) >= max_lines:
            break
        size = utf8_len(line) + (1 if kept else 0)
        if used + size > max_bytes:
            by = "bytes"
            if not kept:
                piece = _tail_of_bytes(line, max_bytes)
                kept.append(piece)
                used = utf8_len(piece)
                partial = True
            break
        kept.append(line)
        used += size
    if len(kept) >= max_lines and used <= max_bytes:
        by = "lines"
    kept.reverse()
    return _result("\n".join(kept), True, by, total, total_bytes, len(kept), max_lines, max_bytes, partial)


def truncate_line(line: str, max_chars: int = GREP_MAX_LINE_LENGTH) -> tuple[str, bool]:
    """Cap one line to ``max_chars`` (UTF-16 units, as pi counts) plus ``... [truncated]``."""
    units = len(line.encode("utf-16-le", "surrogatepass")) // 2
    if units <= max_chars:
        return line, False
    out: list[str] = []
    used = 0
    for ch in line:
        width = 2 if ord(ch) > 0xFFFF else 1
        if used + width > max_chars:
            break
        out.append(ch)
        used += width
    return "".join(out) + "... [truncated]", True


def listing_result(truncation: Truncation, limit_notice: str | None, limit_detail: tuple[str, int] | None,
                   extra: tuple[str, str] | None = None) -> ToolResult:
    """The result of a head-truncated listing (grep, find, ls) with pi's bracketed notices.

    Notices come in pi's order: the result-count limit, the byte limit, then ``extra`` (a notice and
    the details flag it sets); each also records its key in ``details``.
    """
    text = truncation["content"]
    details: JsonObject = {}
    notices: list[str] = []
    if limit_notice is not None and limit_detail is not None:
        notices.append(limit_notice)
        details[limit_detail[0]] = limit_detail[1]
    if truncation["truncated"]:
        notices.append(f"{format_size(DEFAULT_MAX_BYTES)} limit reached")
        details["truncation"] = truncation
    if extra is not None:
        notices.append(extra[0])
        details[extra[1]] = True
    if notices:
        text += "\n\n[" + ". ".join(notices) + "]"
    return text_result(text, details or None)
