"""A reopened session's messages drawn as one widget.

Textual lays out every widget of a screen again when any of them changes height, so a transcript
of a few hundred message widgets made each streamed line slow (seconds to open a 1,000-message
session). Restored messages cannot change any more: they become one ``History`` widget, a Rich
group of the same renderables the live views draw (``blocks.py``), and only what happens after
the reopening gets widgets of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.text import Text
from textual.widgets import Static

from pi_coding_agent.coding.modes.interactive import blocks
from pi_coding_agent.coding.modes.interactive.blocks import Palette

CustomRenderer = Callable[[dict[str, Any], bool], RenderableType | None]


def _boxed(renderable: RenderableType, background: str | None) -> RenderableType:
    """A blank line, then the entry indented by one column (on ``background`` if given)."""
    style = f"on {background}" if background else ""
    return Group(Text(""), Padding(renderable, (0, 1), style=style))


def _tool(name: str, args: dict[str, Any], result: dict[str, Any] | None, is_error: bool, expanded: bool,
          palette: Palette, drawing: blocks.ToolDrawing | None = None) -> RenderableType:
    role = "toolPendingBg" if result is None else "toolErrorBg" if is_error else "toolSuccessBg"
    return _boxed(blocks.tool_renderable(name, args, result, is_error, expanded, palette, drawing=drawing),
                  palette.get(role))


def _assistant(message: dict[str, Any], results: dict[str, dict[str, Any]], hide_thinking: bool,
               expanded: bool, palette: Palette, drawing: blocks.ToolDrawing | None) -> list[RenderableType]:
    out: list[RenderableType] = []
    for part in message.get("content") or []:
        kind = part.get("type")
        if kind == "text" and part.get("text", "").strip():
            out.append(_boxed(blocks.markdown(part["text"], palette), None))
        elif kind == "thinking" and part.get("thinking", "").strip():
            shown = "Thinking… (ctrl+t to show)" if hide_thinking else part["thinking"].strip()
            out.append(_boxed(Text(shown, style=f"italic {palette.get('thinkingText', '')}"), None))
        elif kind == "toolCall":
            result = results.get(part.get("id", ""))
            is_error = bool(result and result.get("isError"))
            out.append(_tool(part.get("name", ""), part.get("arguments") or {}, result, is_error, expanded, palette,
                             drawing))
    reason = message.get("stopReason")
    if reason == "aborted":
        out.append(_boxed(blocks.notice("Operation aborted", "error", palette), None))
    elif reason == "error":
        out.append(_boxed(blocks.notice(f"Error: {message.get('errorMessage') or 'unknown error'}", "error",
                                        palette), None))
    return out


def renderables(messages: list[dict[str, Any]], palette: Palette, hide_thinking: bool,
                expanded: bool, render_custom: CustomRenderer | None = None,
                render_tool: blocks.ToolDrawing | None = None) -> list[RenderableType]:
    """Every message as the live transcript would have shown it (``render_custom``, ``render_tool``:
    the extensions' drawings of custom messages and tool calls)."""
    results = {m.get("toolCallId", ""): m for m in messages if m.get("role") == "toolResult"}
    user_style = f"{palette.get('userMessageText', '')} on {palette.get('userMessageBg', '')}".strip()
    out: list[RenderableType] = []
    for message in messages:
        role = message.get("role")
        if role == "user":
            out.append(_boxed(Text(blocks.message_text(message), style=user_style), palette.get("userMessageBg")))
        elif role == "assistant":
            out += _assistant(message, results, hide_thinking, expanded, palette, render_tool)
        elif role == "bashExecution":
            code = message.get("exitCode")
            output = str(message.get("output", "")) + ("" if code in (0, None) else f"\nexit code {code}")
            out.append(_tool("bash", {"command": message.get("command", "")},
                             {"content": [{"type": "text", "text": output}]}, code not in (0, None), expanded, palette))
        elif role in ("compactionSummary", "branchSummary"):
            out.append(_boxed(blocks.notice(f"[{role}] " + str(message.get("summary", ""))[:500],
                                            "customMessageText", palette), None))
        elif role == "custom" and message.get("display", True):
            drawn = render_custom(message, expanded) if render_custom is not None else None
            if drawn is not None:
                out.append(_boxed(drawn, None))
                continue
            out.append(_boxed(blocks.notice(blocks.message_text(message) or str(message.get("customType", "")),
                                            "customMessageText", palette), None))
    return out


class History(Static):
    """Restored messages as one renderable; ``redraw`` after Ctrl+O / Ctrl+T."""

    def __init__(self, messages: list[dict[str, Any]], palette: Palette,
                 render_custom: CustomRenderer | None = None, render_tool: blocks.ToolDrawing | None = None) -> None:
        super().__init__()
        self.messages = messages
        self.palette = palette
        self.render_custom, self.render_tool = render_custom, render_tool

    def redraw(self, hide_thinking: bool, expanded: bool) -> None:
        self.update(Group(*renderables(self.messages, self.palette, hide_thinking, expanded, self.render_custom,
                                       self.render_tool)))
