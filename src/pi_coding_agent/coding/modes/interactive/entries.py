"""Transcript entries drawn as lines: each keeps the ``Strip``s it rendered until it changes.

The transcript is one line-API widget (``transcript.Transcript``) showing the lines of its entries
one after another. An entry renders at the transcript's width once, and again only when it changed
(``stale``: a streamed delta, a tool's output, Ctrl+O / Ctrl+T) or the width did. A streamed answer
re-renders only its tail after the last finished paragraph (``blocks.stable_split``), so the cost
of a frame does not grow with the answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.console import Console, RenderableType
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.strip import Strip

from pi_coding_agent.ai.types import AssistantContent
from pi_coding_agent.coding.modes.interactive import blocks, history
from pi_coding_agent.coding.modes.interactive.blocks import Palette
from pi_coding_agent.coding.modes.interactive.history import CustomRenderer, Item, Part

PAD = 1  # columns left and right of an entry's text


@dataclass(frozen=True)
class Canvas:
    """What entries are drawn for: the console, the transcript's width and its colours."""

    console: Console
    width: int
    style: Style

    def strips(self, renderable: RenderableType, background: str | None = None) -> list[Strip]:
        """``renderable`` as lines of the full width, padded (but for a ``full_width`` one: lines an
        extension's TypeScript renderer drew for the whole width), on the transcript's colours (or
        ``background``); none when it draws nothing."""
        margin = 0 if getattr(renderable, "full_width", False) else PAD
        inner = max(self.width - 2 * margin, 1)
        style = self.style + Style(bgcolor=background) if background else self.style
        segments = list(self.console.render(renderable, self.console.options.update_width(inner)))
        if not segments:
            return []
        lines = Segment.split_and_crop_lines(segments, inner, include_new_lines=False, pad=True)
        # each line built once and styled as it is built (a quarter of the cost of joining three strips
        # and styling the result); a null style is left off, as ``Strip.apply_style`` leaves it
        pad = Segment(" " * margin, style or None)
        if not style:
            return [Strip([pad, *line, pad], inner + 2 * margin) for line in lines]
        return [Strip([pad, *Segment.apply_style(line, style), pad], inner + 2 * margin) for line in lines]

    def blank(self) -> Strip:
        return Strip.blank(self.width, self.style)

    def parts(self, parts: list[Part]) -> list[Strip]:
        """Each part under a blank line (a part that draws nothing: neither)."""
        out: list[Strip] = []
        for renderable, background in parts:
            strips = self.strips(renderable, background)
            out += [self.blank(), *strips] if strips else []
        return out


class Entry:
    """One entry: a blank line, then a renderable that does not change (a user message, a notice)."""

    def __init__(self, renderable: RenderableType | None = None) -> None:
        self.renderable = renderable
        self.lines: list[Strip] = []
        self.stale = True
        self._canvas: Canvas | None = None

    def draw(self, canvas: Canvas) -> bool:
        """Render again if the entry changed or ``canvas`` is another; True when it did."""
        if not self.stale and canvas == self._canvas:
            return False
        if canvas != self._canvas:
            self.forget()
        self._canvas, self.stale = canvas, False
        self.lines = self.render(canvas)
        return True

    def forget(self) -> None:
        """Drop what was rendered for another width or colours."""

    def render(self, canvas: Canvas) -> list[Strip]:
        return canvas.parts(self.parts())

    def parts(self) -> list[Part]:
        return [(self.renderable, None)] if self.renderable is not None else []


class ToolEntry(Entry):
    """One tool call: title while the arguments stream, then live output, then the result."""

    def __init__(self, palette: Palette, name: str, args: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.palette = palette
        self.tool_name = name
        self.args: dict[str, Any] = args or {}
        self.result: dict[str, Any] | None = None
        self.is_error = False
        self.done = False
        self.expanded = False
        self.duration_ms: int | None = None
        self.drawing: blocks.ToolDrawing | None = None  # the extensions' (``Transcript.render_tool``)

    def finish(self, result: dict[str, Any] | None, is_error: bool, duration_ms: int | None = None) -> None:
        self.result, self.is_error, self.duration_ms, self.done = result, is_error, duration_ms, True

    def parts(self) -> list[Part]:
        role = "toolErrorBg" if self.is_error else "toolSuccessBg" if self.done else "toolPendingBg"
        return [(blocks.tool_renderable(self.tool_name, self.args, self.result, self.is_error, self.expanded,
                                        self.palette, self.duration_ms, self.drawing, not self.done),
                 self.palette.get(role))]


class TextPart:
    """A streamed text or thinking block of an assistant message.

    Finished paragraphs are rendered once into ``_frozen``; a redraw renders only the tail after
    them. Once the message ends (``finish``) the whole text is rendered as one markdown document, as
    a reopened session shows it. A thinking block is plain text, whose lines Rich wraps one by one:
    the lines before its last line break are rendered once, a redraw renders the last one only.
    """

    def __init__(self, palette: Palette, thinking: bool = False) -> None:
        self.palette = palette
        self.thinking = thinking
        self.collapsed = False  # a thinking block hidden by hideThinkingBlock / Ctrl+T shows one line
        self.text = ""
        self.done = False
        self.lines: list[Strip] = []
        self._frozen_to = 0
        self._frozen: list[Strip] = []

    def finish(self) -> None:
        """The message ended: render the whole text as one document from the next redraw on."""
        self.done = True
        self.forget()

    def forget(self) -> None:
        self._frozen_to, self._frozen = 0, []

    def render(self, canvas: Canvas) -> None:
        if self.thinking:
            self._render_thinking(canvas)
            return
        split = len(self.text) if self.done else blocks.stable_split(self.text, self._frozen_to)
        if split > self._frozen_to:
            chunk = self._markdown(canvas, self.text[self._frozen_to:split])
            if self._frozen and chunk:
                self._frozen.append(canvas.blank())
            self._frozen += chunk
            self._frozen_to = split
        tail = self._markdown(canvas, self.text[self._frozen_to:])
        self.lines = [*self._frozen, canvas.blank(), *tail] if self._frozen and tail else self._frozen + tail

    def _render_thinking(self, canvas: Canvas) -> None:
        """The lines of ``text.strip()``: those before its last line break from ``_frozen``."""
        style = f"italic {self.palette.get('thinkingText', '')}"
        if self.collapsed:
            self.lines = canvas.strips(Text("Thinking… (ctrl+t to show)", style=style))
            return
        text = self.text
        end = len(text.rstrip())
        start = self._frozen_to or len(text) - len(text.lstrip())
        split = text.rfind("\n", start, end)
        if split >= start:
            self._frozen += canvas.strips(Text(text[start:split], style=style))
            self._frozen_to = start = split + 1
        tail = text[start:end]
        self.lines = self._frozen + canvas.strips(Text(tail, style=style)) if tail or not self._frozen else self._frozen

    def _markdown(self, canvas: Canvas, text: str) -> list[Strip]:
        return canvas.strips(blocks.markdown(text, self.palette)) if text.strip() else []


class AssistantEntry(Entry):
    """An assistant message's text and thinking blocks, by content index, under one blank line."""

    def __init__(self, palette: Palette, hide_thinking: bool) -> None:
        super().__init__()
        self.palette = palette
        self.hide_thinking = hide_thinking
        self.blocks: dict[int, TextPart] = {}
        self.changed: set[int] = set()  # the blocks to render again

    def block(self, index: int, thinking: bool) -> TextPart:
        part = self.blocks.get(index)
        if part is None:
            part = self.blocks[index] = TextPart(self.palette, thinking)
            part.collapsed = thinking and self.hide_thinking
        self.changed.add(index)
        self.stale = True
        return part

    def set_content(self, content: Sequence[AssistantContent]) -> None:
        """The final message's blocks (authoritative over what streamed), each finished."""
        for index, part in enumerate(content):
            if part["type"] == "text":
                view = self.block(index, False)
                view.text = part.get("text", "")
            elif part["type"] == "thinking":
                view = self.block(index, True)
                view.text = part.get("thinking", "")
            else:
                continue
            view.finish()

    def set_hide_thinking(self, hide: bool) -> None:
        self.hide_thinking = hide
        for index, part in self.blocks.items():
            if part.thinking:
                part.collapsed = hide
                self.changed.add(index)
                self.stale = True

    def forget(self) -> None:
        self.changed = set(self.blocks)
        for part in self.blocks.values():
            part.forget()

    def render(self, canvas: Canvas) -> list[Strip]:
        lines = [canvas.blank()]
        for index in sorted(self.blocks):
            part = self.blocks[index]
            if index in self.changed:
                part.render(canvas)
            lines += part.lines
        self.changed.clear()
        return lines


class CustomEntry(Entry):
    """An extension's ``custom`` entry appended live, drawn by its renderer again when Ctrl+O changes
    ``expanded`` or the width or colours change, as a reopened session's entries are."""

    def __init__(self, item: Item, render_custom: CustomRenderer, expanded: bool, drawn: RenderableType) -> None:
        super().__init__()
        self.messages = (item,)  # what a TypeScript renderer's late lines look for (``_redraw``)
        self.render_custom, self.expanded = render_custom, expanded
        self._drawn: dict[bool, RenderableType | None] = {expanded: drawn}

    def forget(self) -> None:
        if self._canvas is not None:  # another width or theme: the renderer draws again (not on the first draw)
            self._drawn.clear()

    def parts(self) -> list[Part]:
        if self.expanded not in self._drawn:
            self._drawn[self.expanded] = self.render_custom(self.messages[0], self.expanded)
        drawn = self._drawn[self.expanded]
        return [(drawn, None)] if drawn is not None else []


class HistoryEntry(Entry):
    """Restored messages (a reopened session), drawn as the live entries would have drawn them."""

    def __init__(self, messages: Sequence[Item], palette: Palette, render_custom: CustomRenderer,
                 render_tool: blocks.ToolDrawing | None = None) -> None:
        super().__init__()
        self.messages = messages
        self.palette = palette
        self.render_custom, self.render_tool = render_custom, render_tool
        self.hide_thinking = False
        self.expanded = False

    def parts(self) -> list[Part]:
        return history.parts(self.messages, self.palette, self.hide_thinking, self.expanded, self.render_custom,
                             self.render_tool)
