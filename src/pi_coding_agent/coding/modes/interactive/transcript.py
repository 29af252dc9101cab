"""The scrolling transcript: one widget per user message, assistant message, tool call and notice.

Session events arrive far faster than a terminal can draw (thousands of deltas a second); an event
only changes a view's data and marks it dirty, and a timer redraws the dirty views at most
``FPS`` times a second. A streamed answer re-renders only its tail after the last finished
paragraph (``blocks.stable_split``), so the cost of a frame does not grow with the answer.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.containers import Vertical, VerticalScroll
from textual.geometry import Region, Size
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Static

from pi_coding_agent.coding.modes.interactive import blocks
from pi_coding_agent.coding.modes.interactive.blocks import Palette
from pi_coding_agent.coding.modes.interactive.history import CustomRenderer, History

FPS = 30
# a typed key is drawn in a frame of its own: the transcript waits this long after a key, but holds
# a redraw back no longer than HOLD_AT_MOST (a fast typist does not freeze a streaming answer)
HOLD_AFTER_KEY_S = 0.05
HOLD_AT_MOST_S = 0.25
RESTORED_MESSAGES = 200  # a reopened session draws this many messages at a time, newest first


class Entry(Static):
    """A static transcript entry (user message, notice)."""

    DEFAULT_CSS = "Entry { margin: 1 0 0 0; padding: 0 1; }"


class TextBlock(Widget):
    """A streamed text or thinking block, drawn from lines it renders and keeps itself.

    Finished paragraphs are rendered once into ``_frozen``; a frame renders only the tail after them
    (``blocks.stable_split``) and asks for a layout of the screen only when the block's height
    changed (a layout redraws every widget on the screen). ``render_lines`` hands Textual the kept
    lines as they are, padded and styled: Textual's own line cache is cleared whenever a widget
    grows, which would re-render every line of a streaming answer on every frame. Once the message
    ends (``finish``) the whole text is rendered as one markdown document, as a reopened session
    shows it.
    """

    DEFAULT_CSS = "TextBlock { height: auto; }"
    PAD = 1  # columns left and right

    def __init__(self, palette: Palette, thinking: bool = False) -> None:
        super().__init__(classes="thinking" if thinking else "")
        self.palette = palette
        self.thinking = thinking
        self.collapsed = False  # a thinking block hidden by hideThinkingBlock / Ctrl+T shows one line
        self.text = ""
        self.done = False
        self._frozen_to = 0
        self._frozen: list[Strip] = []
        self._lines: list[Strip] = []
        self._width = 0  # the widget width the lines were rendered for (0: not laid out yet)
        self._style = Style()

    def render_now(self) -> bool:
        height = len(self._lines)
        if self._width:
            self._render_text()
        self.refresh(layout=not self._width or len(self._lines) != height)
        return True

    def finish(self) -> None:
        """The message ended: render the whole text as one document from the next frame on."""
        self.done = True
        self._frozen_to, self._frozen = 0, []

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        if width != self._width or self.rich_style != self._style:
            self._width, self._style, self._frozen_to, self._frozen = width, self.rich_style, 0, []
            self._render_text()
        return len(self._lines)

    def render_lines(self, crop: Region) -> list[Strip]:
        width = self.size.width
        if width != self._width or self.rich_style != self._style:
            self.get_content_height(self.size, self.size, width)
        lines = self._lines[crop.y:crop.bottom]
        lines += [Strip.blank(width, self._style)] * (crop.height - len(lines))
        if crop.x or crop.right != width:
            lines = [line.crop(crop.x, crop.right) for line in lines]
        return lines

    def _render_text(self) -> None:
        if self.thinking:
            shown = "Thinking… (ctrl+t to show)" if self.collapsed else self.text.strip()
            self._lines = self._strips(Text(shown, style=f"italic {self.palette.get('thinkingText', '')}"))
            return
        split = len(self.text) if self.done else blocks.stable_split(self.text, self._frozen_to)
        if split > self._frozen_to:
            chunk = self._markdown(self.text[self._frozen_to:split])
            if self._frozen and chunk:
                self._frozen.append(self._blank())
            self._frozen += chunk
            self._frozen_to = split
        tail = self._markdown(self.text[self._frozen_to:])
        self._lines = [*self._frozen, self._blank(), *tail] if self._frozen and tail else self._frozen + tail

    def _markdown(self, text: str) -> list[Strip]:
        return self._strips(blocks.markdown(text, self.palette)) if text.strip() else []

    def _blank(self) -> Strip:
        return Strip.blank(self._width, self._style)

    def _strips(self, renderable: Any) -> list[Strip]:
        """``renderable`` as lines of the widget's full width: padded, on the widget's colours."""
        inner = max(self._width - 2 * self.PAD, 1)
        console = self.app.console
        segments = console.render(renderable, console.options.update_width(inner))
        pad = Strip.blank(self.PAD)
        return [Strip.join([pad, Strip(line, inner), pad]).apply_style(self._style)
                for line in Segment.split_and_crop_lines(segments, inner, include_new_lines=False, pad=True)]


class ToolView(Static):
    """One tool call: title while the arguments stream, then live output, then the result."""

    DEFAULT_CSS = """
    ToolView { margin: 1 0 0 0; padding: 0 1; background: $tool-pending; }
    ToolView.-success { background: $tool-success; }
    ToolView.-error { background: $tool-error; }
    """

    def __init__(self, palette: Palette, name: str, args: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.palette = palette
        self.tool_name = name
        self.args: dict[str, Any] = args or {}
        self.result: dict[str, Any] | None = None
        self.is_error = False
        self.expanded = False
        self.duration_ms: int | None = None
        self.done = False
        self.drawing: blocks.ToolDrawing | None = None  # the extensions' (``Transcript.render_tool``)

    def finish(self, result: dict[str, Any] | None, is_error: bool, duration_ms: int | None = None) -> None:
        self.result, self.is_error, self.duration_ms, self.done = result, is_error, duration_ms, True
        self.set_class(is_error, "-error")
        self.set_class(not is_error, "-success")

    def render_now(self) -> bool:
        self.update(blocks.tool_renderable(self.tool_name, self.args, self.result, self.is_error, self.expanded,
                                           self.palette, self.duration_ms, self.drawing, not self.done))
        return True


class AssistantView(Vertical):
    """An assistant message's text and thinking blocks, by content index."""

    DEFAULT_CSS = "AssistantView { height: auto; margin: 1 0 0 0; }"

    def __init__(self, palette: Palette, hide_thinking: bool) -> None:
        super().__init__()
        self.palette = palette
        self.hide_thinking = hide_thinking
        self.blocks: dict[int, TextBlock] = {}

    def block(self, index: int, thinking: bool) -> TextBlock:
        view = self.blocks.get(index)
        if view is None:
            view = self.blocks[index] = TextBlock(self.palette, thinking)
            view.collapsed = thinking and self.hide_thinking
            self.mount(view)
        return view

    def set_content(self, content: list[dict[str, Any]]) -> list[TextBlock]:
        """The final message's blocks (authoritative over what streamed), each finished; returns them
        to redraw."""
        changed = []
        for index, part in enumerate(content):
            kind = part.get("type")
            if kind not in ("text", "thinking"):
                continue
            view = self.block(index, kind == "thinking")
            view.text = part.get(kind, "")
            view.finish()
            changed.append(view)
        return changed


class Transcript(VerticalScroll):
    """Turns session events into views; ``flush`` (on a timer) redraws the views that changed."""

    DEFAULT_CSS = "Transcript { height: 1fr; scrollbar-size-vertical: 1; }"

    def __init__(self, palette: Palette, hide_thinking: bool = False) -> None:
        super().__init__(id="transcript")
        self.palette = palette
        self.hide_thinking = hide_thinking
        self.tools_expanded = False
        self._current: AssistantView | None = None
        self._tools: dict[str, ToolView] = {}
        self._dirty: dict[int, Any] = {}
        self._older: list[dict[str, Any]] = []  # restored messages not drawn yet (above the top)
        self._loading_older = False
        # an extension's drawing of a custom message, None for the default (``extension_hooks``)
        self.render_custom: CustomRenderer = lambda message, expanded: None
        self.render_tool: blocks.ToolDrawing | None = None  # extensions' tool drawings, likewise
        self._held_until = 0.0
        self._held_since = 0.0  # when the first redraw was held back (0: none is)

    def on_mount(self) -> None:
        self.set_interval(1 / FPS, self.flush)

    def _add(self, widget: Any) -> None:
        self.mount(widget)
        self.call_after_refresh(self.scroll_end, animate=False)

    # ------------------------------------------------------------------ drawing

    def mark(self, view: Any) -> None:
        self._dirty[id(view)] = view

    def hold(self) -> None:
        """A key was typed: let the editor's frame go first."""
        self._held_until = time.monotonic() + HOLD_AFTER_KEY_S

    def flush(self) -> None:
        if not self._dirty:
            return
        now = time.monotonic()
        if now < self._held_until:
            self._held_since = self._held_since or now
            if now - self._held_since < HOLD_AT_MOST_S:
                return
        self._held_since = 0.0
        follow = self.scroll_y >= self.max_scroll_y - 1
        views, self._dirty = list(self._dirty.values()), {}
        for view in views:
            if view.parent is not None and not (view.is_attached and view.render_now()):
                self.mark(view)  # still being mounted
        if follow:
            self.call_after_refresh(self.scroll_end, animate=False)

    def add_entry(self, renderable: Any, classes: str = "") -> Entry:
        entry = Entry(renderable, classes=classes)
        self._add(entry)
        return entry

    def add_notice(self, text: str, role: str = "muted") -> Entry:
        return self.add_entry(blocks.notice(text, role, self.palette), "notice")

    def add_user(self, text: str) -> Entry:
        style = f"{self.palette.get('userMessageText', '')} on {self.palette.get('userMessageBg', '')}".strip()
        return self.add_entry(Text(text, style=style), "user")

    def add_tool(self, call_id: str, name: str, args: dict[str, Any] | None = None) -> ToolView:
        view = self._tools.get(call_id)
        if view is None:
            view = self._tools[call_id] = ToolView(self.palette, name, args)
            view.expanded, view.drawing = self.tools_expanded, self.render_tool
            self._add(view)
        elif args:
            view.args = args
        self.mark(view)
        return view

    # ------------------------------------------------------------------ events

    def handle(self, event: dict[str, Any]) -> None:
        handler = getattr(self, f"_on_{event['type']}", None)
        if handler is not None:
            handler(event)

    def _on_message_start(self, event: dict[str, Any]) -> None:
        message = event["message"]
        role = message.get("role")
        if role == "user":
            self.add_user(blocks.message_text(message))
        elif role == "assistant":
            self._current = AssistantView(self.palette, self.hide_thinking)
            self._add(self._current)
        elif role == "custom" and message.get("display", True):
            drawn = self.render_custom(message, self.tools_expanded)
            if drawn is not None:
                self.add_entry(drawn, "notice")
            else:
                self.add_notice(blocks.message_text(message) or str(message.get("customType", "")), "customMessageText")

    def _on_message_update(self, event: dict[str, Any]) -> None:
        update = event["assistantMessageEvent"]
        kind, current = update["type"], self._current
        if current is None:
            return
        if kind in ("text_delta", "thinking_delta"):
            view = current.block(update["contentIndex"], kind == "thinking_delta")
            view.text += update["delta"]
            self.mark(view)
        elif kind == "toolcall_start":
            self.add_tool(update["id"], update["toolName"])
        elif kind == "toolcall_end":
            call = update["toolCall"]
            self.add_tool(call["id"], call["name"], call.get("arguments") or {})

    def _on_message_end(self, event: dict[str, Any]) -> None:
        message = event["message"]
        if message.get("role") != "assistant":
            return
        view = self._current or AssistantView(self.palette, self.hide_thinking)
        if self._current is None:
            self._add(view)
        self._current = None
        for changed in view.set_content(message.get("content") or []):
            self.mark(changed)
        for part in message.get("content") or []:
            if part.get("type") == "toolCall":
                self.add_tool(part["id"], part["name"], part.get("arguments") or {})
        reason = message.get("stopReason")
        if reason == "aborted":
            self.add_notice("Operation aborted", "error")
        elif reason == "error":
            self.add_notice(f"Error: {message.get('errorMessage') or 'unknown error'}", "error")

    def _on_tool_execution_start(self, event: dict[str, Any]) -> None:
        self.add_tool(event["toolCallId"], event["toolName"], event.get("args"))

    def _on_tool_execution_update(self, event: dict[str, Any]) -> None:
        view = self.add_tool(event["toolCallId"], event["toolName"])
        view.result = event.get("partialResult")

    def _on_tool_execution_end(self, event: dict[str, Any]) -> None:
        view = self.add_tool(event["toolCallId"], event["toolName"])
        view.finish(event.get("result"), bool(event.get("isError")), event.get("durationMs"))

    def _on_compaction_start(self, event: dict[str, Any]) -> None:
        self.add_notice(f"Compacting context ({event.get('reason', 'manual')})…", "warning")

    def _on_compaction_end(self, event: dict[str, Any]) -> None:
        if event.get("aborted"):
            self.add_notice("Compaction cancelled", "warning")
        elif event.get("errorMessage"):
            self.add_notice(f"Compaction failed: {event['errorMessage']}", "error")
        else:
            before = (event.get("result") or {}).get("tokensBefore")
            self.add_notice("Context compacted" + (f" (was {before} tokens)" if before else ""), "success")

    def _on_auto_retry_start(self, event: dict[str, Any]) -> None:
        self.add_notice(f"Retrying ({event['attempt']}/{event['maxAttempts']}) in {event['delayMs'] / 1000:.0f}s: "
                        f"{event.get('errorMessage', '')}", "warning")

    def _on_auto_retry_end(self, event: dict[str, Any]) -> None:
        if not event.get("success") and event.get("finalError"):
            self.add_notice(f"Retry failed: {event['finalError']}", "error")

    def _on_extension_error(self, event: dict[str, Any]) -> None:
        self.add_notice(f"Extension error ({event.get('extensionPath')}): {event.get('error')}", "error")

    # ------------------------------------------------------------------ whole transcripts

    async def restore(self, messages: list[dict[str, Any]]) -> None:
        """Replace everything with ``messages`` (a reopened, resumed or forked session), drawn as one
        ``History`` widget."""
        await self.remove_children()
        self._tools.clear()
        self._current = None
        self._older = list(messages)
        await self._load_older()
        self.scroll_end(animate=False)

    async def _load_older(self) -> None:
        """The next ``RESTORED_MESSAGES`` older messages as a ``History`` at the top: a reopened
        session draws its latest messages first, the rest as the reader scrolls up to them."""
        chunk, self._older = self._older[-RESTORED_MESSAGES:], self._older[:-RESTORED_MESSAGES]
        if not chunk:
            return
        history = History(chunk, self.palette, self.render_custom, self.render_tool)
        history.redraw(self.hide_thinking, self.tools_expanded)
        first = self.children[0] if self.children else None
        await self.mount(history, before=first)
        if first is not None:
            self.scroll_to(y=self.scroll_y + history.outer_size.height, animate=False)

    def _at_top(self) -> bool:
        """Scrolling up from the top loads the next older chunk; True when it did."""
        if not self._older or self.scroll_y > 0:
            return False
        if not self._loading_older:
            self._loading_older = True
            task = asyncio.create_task(self._load_older())
            task.add_done_callback(lambda _: setattr(self, "_loading_older", False))
        return True

    def page_up(self) -> None:
        if not self._at_top():
            self.scroll_page_up(animate=False)

    def page_down(self) -> None:
        self.scroll_page_down(animate=False)

    def _on_mouse_scroll_up(self, event: Any) -> None:
        self._at_top()

    def add_bash(self, command: str, output: str, exit_code: int | None) -> ToolView:
        """A user ``!command`` (live output while it runs, ``exit_code`` once done)."""
        view = ToolView(self.palette, "bash", {"command": command})
        view.expanded = self.tools_expanded
        view.result = {"content": [{"type": "text", "text": output}]}
        self._add(view)
        if exit_code is not None:
            self.finish_bash(view, output, exit_code)
        self.mark(view)
        return view

    def finish_bash(self, view: ToolView, output: str, exit_code: int | None) -> None:
        suffix = "" if exit_code in (0, None) else f"\nexit code {exit_code}"
        view.finish({"content": [{"type": "text", "text": output + suffix}]}, exit_code not in (0, None))
        self.mark(view)

    def set_tools_expanded(self, expanded: bool) -> None:
        self.tools_expanded = expanded
        for view in self.query(ToolView):
            view.expanded = expanded
            self.mark(view)
        self._redraw_history()

    def _redraw_history(self) -> None:
        for history in self.query(History):
            history.redraw(self.hide_thinking, self.tools_expanded)

    def set_hide_thinking(self, hide: bool) -> None:
        self.hide_thinking = hide
        for view in self.query(AssistantView):
            view.hide_thinking = hide
        for block in self.query(TextBlock):
            if block.thinking:
                block.collapsed = hide
                self.mark(block)
        self._redraw_history()
