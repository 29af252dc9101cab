"""Rich renderables for transcript entries: pure functions of a message or tool call and a palette.

Kept apart from the widgets so the text a tool call shows (``$ cmd``, ``read path:1-20``, an edit's
diff) is tested without a terminal. A palette maps pi's theme colour roles (``toolTitle``,
``toolDiffAdded``...) to colours Rich accepts.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from rich.console import Group, RenderableType
from rich.text import Text

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from rich.markdown import Markdown

Palette = dict[str, str]
# (tool name, args, result, options, default title, default body) -> the title and body to draw
ToolDrawing = Callable[[str, dict[str, Any], dict[str, Any] | None, dict[str, bool], RenderableType,
                        RenderableType | None], tuple[RenderableType, RenderableType | None]]

COLLAPSED_LINES = 10  # tool output lines shown until Ctrl+O expands them


def markdown(text: str, palette: Palette) -> RenderableType:
    """Rich's ``Markdown`` of ``text``, parsed by one shared parser: Rich builds a markdown-it parser
    for each document, which costs six times parsing a paragraph (a streamed frame renders one or
    two documents, a reopened session hundreds)."""
    document = copy.copy(_empty_markdown("monokai" if palette.get("appearance") != "light" else "default"))
    document.markup, document.parsed = text, _parser().parse(text)
    return document


@functools.cache
def _empty_markdown(code_theme: str) -> Markdown:
    """Rich's markdown (with markdown-it and pygments) loads with the first answer, not at launch."""
    from rich.markdown import Markdown

    return Markdown("", code_theme=code_theme, hyperlinks=False)


@functools.cache
def _parser() -> MarkdownIt:
    from markdown_it import MarkdownIt

    return MarkdownIt().enable("strikethrough").enable("table")  # as ``rich.markdown.Markdown`` builds it


def result_text(result: dict[str, Any] | None) -> str:
    """The text blocks of a tool result (images become a placeholder line)."""
    if not result:
        return ""
    parts = []
    for block in result.get("content") or []:
        if block.get("type") == "text":
            parts.append(block.get("text", ""))
        elif block.get("type") == "image":
            parts.append(f"[image {block.get('mimeType', '')}]")
    return "\n".join(parts)


def _tail(text: str, expanded: bool) -> tuple[str, int]:
    """The output to show and how many lines were hidden."""
    lines = text.rstrip("\n").split("\n")
    if expanded or len(lines) <= COLLAPSED_LINES:
        return "\n".join(lines), 0
    return "\n".join(lines[-COLLAPSED_LINES:]), len(lines) - COLLAPSED_LINES


def tool_title(name: str, args: dict[str, Any]) -> str:
    """The one-line header of a tool call: what it does, in the terms a user reads it."""
    path = args.get("path") or args.get("file_path") or ""
    if name == "bash":
        return f"$ {args.get('command', '')}"
    if name == "read":
        offset, limit = args.get("offset"), args.get("limit")
        span = ""
        if offset or limit:
            start = int(offset or 1)
            span = f":{start}-{start + int(limit) - 1}" if limit else f":{start}-"
        return f"read {path}{span}"
    if name == "write":
        lines = str(args.get("content", "")).count("\n") + (1 if args.get("content") else 0)
        return f"write {path} ({lines} lines)"
    if name == "edit":
        return f"edit {path}"
    if name in ("grep", "find"):
        where = f" in {path}" if path else ""
        return f"{name} {args.get('pattern', '')}{where}"
    if name == "ls":
        return f"ls {path or '.'}"
    import json

    shown = json.dumps(args, ensure_ascii=False)
    return f"{name} {shown if len(shown) <= 200 else shown[:199] + '…'}"


def diff_text(diff: str, palette: Palette) -> Text:
    """An edit's unified diff, lines coloured by their sign."""
    out = Text()
    for line in diff.split("\n"):
        role = ("toolDiffAdded" if line.startswith("+") else "toolDiffRemoved" if line.startswith("-")
                else "toolDiffContext")
        out.append(line + "\n", style=palette.get(role, ""))
    out.rstrip()
    return out


def tool_body(name: str, args: dict[str, Any], result: dict[str, Any] | None, is_error: bool,
              expanded: bool, palette: Palette) -> RenderableType | None:
    """What goes under the title: live or final output, a diff for a successful edit, a line count for a read."""
    if result is None:
        return None
    details = result.get("details") or {}
    if name == "edit" and not is_error and isinstance(details, dict) and details.get("diff"):
        return diff_text(str(details["diff"]), palette)
    text = result_text(result)
    if name == "read" and not is_error and not expanded:
        count = text.count("\n") + 1 if text else 0
        return Text(f"{count} lines", style=palette.get("muted", ""))
    shown, hidden = _tail(text, expanded)
    body = Text()
    if hidden:
        body.append(f"… {hidden} earlier lines (ctrl+o to expand)\n", style=palette.get("dim", ""))
    body.append(shown, style=palette.get("error" if is_error else "toolOutput", ""))
    return body


def tool_renderable(name: str, args: dict[str, Any], result: dict[str, Any] | None, is_error: bool,
                    expanded: bool, palette: Palette, duration_ms: int | None = None,
                    drawing: ToolDrawing | None = None, partial: bool = False) -> RenderableType:
    """``drawing``: the extensions' title and body in place of the defaults; ``partial``: live output."""
    title: RenderableType = Text(tool_title(name, args), style=f"bold {palette.get('toolTitle', '')}")
    body = tool_body(name, args, result, is_error, expanded, palette)
    if drawing is not None:
        options = {"expanded": expanded, "isPartial": partial, "isError": is_error}
        title, body = drawing(name, args, result, options, title, body)
    parts: list[RenderableType] = [title]
    if body is not None:
        parts.append(body)
    if duration_ms is not None:
        parts.append(Text(f"Took {duration_ms / 1000:.1f}s", style=palette.get("dim", "")))
    return Group(*parts)


def stable_split(text: str, start: int) -> int:
    """The end of the last blank line in ``text[start:]`` outside a code fence (``start`` when none).

    What lies before it no longer changes as deltas arrive, so it is rendered once; only the tail
    after it is rendered again each frame (a long answer stays cheap to stream).
    """
    split, pos, in_fence = start, start, False
    for line in text[start:].splitlines(keepends=True):
        if line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence
        pos += len(line)
        if not in_fence and not line.strip() and line.endswith("\n") and pos < len(text):
            split = pos
    return split


def message_text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content or [] if b.get("type") == "text")


def notice(text: str, role: str, palette: Palette) -> Text:
    return Text(text, style=palette.get(role, ""))
