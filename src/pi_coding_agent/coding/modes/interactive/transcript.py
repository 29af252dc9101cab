"""The scrolling transcript: one line-API widget showing the lines its entries rendered.

Session events arrive far faster than a terminal can draw (thousands of deltas a second); an event
only changes an entry's data and marks it dirty, and a timer redraws the dirty entries at most
``FPS`` times a second. Each entry keeps the lines it rendered (``entries.py``), so a frame renders
only what changed, and the widget hands Textual those lines as they are (``render_line``): a
growing answer extends the virtual height, without a layout of the screen, and a scroll repaints
kept lines rather than rendering them again.
"""

from __future__ import annotations

import time
from bisect import bisect_right
from collections.abc import Sequence
from typing import Any

from rich.text import Text
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.selection import Selection
from textual.strip import Strip

from pi_coding_agent.coding.events import (
    AgentEvent,
    AutoRetryEndEvent,
    AutoRetryStartEvent,
    CompactionEndEvent,
    CompactionStartEvent,
    EntryAppendedEvent,
    ExtensionErrorEvent,
    MessageEndEvent,
    MessageStartEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
)
from pi_coding_agent.coding.modes.interactive import blocks
from pi_coding_agent.coding.modes.interactive.blocks import Palette
from pi_coding_agent.coding.modes.interactive.entries import (
    AssistantEntry,
    Canvas,
    CustomEntry,
    Entry,
    HistoryEntry,
    ToolEntry,
)
from pi_coding_agent.coding.modes.interactive.history import CustomRenderer, Item

FPS = 30
# a typed key is drawn in a frame of its own: the transcript waits this long after a key, but holds
# a redraw back no longer than HOLD_AT_MOST (a fast typist does not freeze a streaming answer)
HOLD_AFTER_KEY_S = 0.05
HOLD_AT_MOST_S = 0.25
RESTORED_MESSAGES = 200  # a reopened session draws this many messages at a time, newest first


class Transcript(ScrollView):
    """Turns session events into entries; ``flush`` (on a timer) redraws the entries that changed."""

    DEFAULT_CSS = "Transcript { height: 1fr; scrollbar-size-vertical: 1; overflow-x: hidden; }"
    KEEPS_LINES_WHEN_SHORTER = True  # a line is drawn from the scroll offset, which a shorter view keeps

    def __init__(self, palette: Palette, hide_thinking: bool = False) -> None:
        super().__init__(id="transcript")
        self.palette = palette
        self.hide_thinking = hide_thinking
        self.tools_expanded = False
        self.entries: list[Entry] = []
        self._starts: list[int] = []  # the first line of each entry
        self._canvas: Canvas | None = None  # what the entries were drawn for
        self._current: AssistantEntry | None = None
        self._tools: dict[str, ToolEntry] = {}
        self._dirty = False  # an entry was marked since the last redraw
        self._older: list[Item] = []  # restored messages (and custom entries) not drawn yet (above the top)
        # an extension's drawing of a custom message, None for the default (``extension_hooks``)
        self.render_custom: CustomRenderer = lambda message, expanded: None
        self.render_tool: blocks.ToolDrawing | None = None  # extensions' tool drawings, likewise
        self._held_until = 0.0
        self._held_since = 0.0  # when the first redraw was held back (0: none is)
        self._shown_height = 0  # the height of the last size, for ``on_resize``

    def on_mount(self) -> None:
        self.set_interval(1 / FPS, self.flush)

    def on_resize(self) -> None:
        """A reader at the bottom stays there when the transcript gets shorter (a picker takes rows
        below it), so the last lines stay in view, as in pi."""
        following = self.scroll_y >= self.virtual_size.height - self._shown_height - 1
        self._shown_height = self.scrollable_content_region.height
        self._redraw(follow=following)
        if following and self.scroll_y < self.max_scroll_y:
            self.scroll_to(y=self.max_scroll_y, animate=False)

    def _add(self, entry: Entry) -> None:
        self.entries.append(entry)
        self.mark(entry)

    # ------------------------------------------------------------------ drawing

    def mark(self, entry: Entry) -> None:
        entry.stale = True
        self._dirty = True

    def hold(self) -> None:
        """A key was typed: let the editor's frame go first."""
        self._held_until = time.monotonic() + HOLD_AFTER_KEY_S

    def flush(self) -> None:
        canvas = self._new_canvas()
        if not self._dirty and canvas == self._canvas:
            return
        now = time.monotonic()
        if now < self._held_until:
            self._held_since = self._held_since or now
            if now - self._held_since < HOLD_AT_MOST_S:
                return
        self._held_since = 0.0
        self._redraw(follow=self._following(), canvas=canvas)

    def _new_canvas(self) -> Canvas | None:
        width = self.scrollable_content_region.width
        return Canvas(self.app.console, width, self.rich_style) if width > 0 else None

    def _following(self) -> bool:
        return self.scroll_y >= self.max_scroll_y - 1

    def _redraw(self, follow: bool, canvas: Canvas | None = None) -> None:
        """Render the entries that changed (all of them on another width), repaint the lines that
        changed or moved, and keep the bottom in view if it was (``canvas``: one ``flush`` just built)."""
        canvas = canvas or self._new_canvas()
        if canvas is None:
            return
        self._dirty = False
        resized, self._canvas = canvas != self._canvas, canvas
        moved: int | None = None  # the first entry whose height changed: every line below it moves
        for index, entry in enumerate(self.entries):
            if not entry.stale and not resized:
                continue
            before = entry.lines
            entry.draw(canvas)
            if moved is not None:
                continue
            if index < len(self._starts) and len(before) == len(entry.lines):
                same = _same_prefix(before, entry.lines)
                self._repaint(self._starts[index] + same, len(before) - same)
            else:
                moved = index
        if moved is None and not resized:
            return
        self._restart(len(self.entries) if moved is None else moved)
        height = self._starts[-1] + len(self.entries[-1].lines) if self.entries else 0
        size = Size(canvas.width, height)
        if size != self.virtual_size:
            # without the reactive's layout of the whole screen: only this widget's scroll range changed
            self.set_reactive(Transcript.virtual_size, size)
            self._scroll_update(size)
        if follow:
            self.scroll_to(y=self.max_scroll_y, animate=False)
        if moved is not None:
            self._repaint(self._starts[moved], self.size.height + int(self.scroll_y))

    def _restart(self, index: int) -> None:
        """The first lines of the entries from ``index`` on (or from the first one not counted yet)."""
        del self._starts[index:]
        index = len(self._starts)
        line = self._starts[-1] + len(self.entries[index - 1].lines) if index else 0
        for entry in self.entries[index:]:
            self._starts.append(line)
            line += len(entry.lines)

    def _repaint(self, first: int, count: int) -> None:
        """Repaint the lines ``first`` to ``first + count`` (transcript lines) that are in view."""
        top = max(first, int(self.scroll_y))
        bottom = min(first + count, int(self.scroll_y) + self.size.height)
        if bottom > top:
            self.refresh_lines(top, bottom - top)

    def render_line(self, y: int) -> Strip:
        """A kept line, highlighted where the mouse selected it, marked with its offsets for selecting."""
        line = int(self.scroll_y) + y
        strip = self._kept_line(line)
        selection = self.text_selection
        span = selection.get_span(line) if selection is not None else None
        if span is not None:
            start, end = span[0], strip.cell_length if span[1] == -1 else span[1]
            style = self.screen.get_component_rich_style("screen--selection")
            strip = Strip.join([strip.crop(0, start), strip.crop(start, end).apply_style(style), strip.crop(end)])
        return strip.apply_offsets(0, line)  # kept by the strip, for the next frame

    def _kept_line(self, line: int) -> Strip:
        width = self.scrollable_content_region.width
        index = bisect_right(self._starts, line) - 1
        if index < 0 or line - self._starts[index] >= len(self.entries[index].lines):
            return Strip.blank(width, self.rich_style)
        strip = self.entries[index].lines[line - self._starts[index]]
        return strip if strip.cell_length == width else strip.crop_extend(0, width, self.rich_style)

    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        text = "\n".join(strip.text.rstrip() for entry in self.entries for strip in entry.lines)
        return selection.extract(text), "\n"

    def selection_updated(self, selection: Selection | None) -> None:
        self.refresh()

    def add_entry(self, renderable: Any) -> Entry:
        entry = Entry(renderable)
        self._add(entry)
        return entry

    def add_notice(self, text: str, role: str = "muted") -> Entry:
        return self.add_entry(blocks.notice(text, role, self.palette))

    def add_user(self, text: str) -> Entry:
        style = f"{self.palette.get('userMessageText', '')} on {self.palette.get('userMessageBg', '')}".strip()
        return self.add_entry(Text(text, style=style))

    def add_tool(self, call_id: str, name: str, args: dict[str, Any] | None = None) -> ToolEntry:
        entry = self._tools.get(call_id)
        if entry is None:
            entry = self._tools[call_id] = ToolEntry(self.palette, name, args)
            entry.expanded, entry.drawing = self.tools_expanded, self.render_tool
            self._add(entry)
        elif args:
            entry.args = args
        self.mark(entry)
        return entry

    # ------------------------------------------------------------------ events

    def handle(self, event: AgentEvent) -> None:
        handler = getattr(self, f"_on_{event['type']}", None)
        if handler is not None:
            handler(event)

    def _on_message_start(self, event: MessageStartEvent) -> None:
        message = event["message"]
        if message["role"] == "user":
            self.add_user(blocks.message_text(message))
        elif message["role"] == "assistant":
            self._current = AssistantEntry(self.palette, self.hide_thinking)
            self._add(self._current)
        elif message["role"] == "custom" and message.get("display", True):
            drawn = self.render_custom(message, self.tools_expanded)
            if drawn is not None:
                self.add_entry(drawn)
            else:
                self.add_notice(blocks.message_text(message) or str(message.get("customType", "")), "customMessageText")

    def _on_message_update(self, event: dict[str, Any]) -> None:
        update = event["assistantMessageEvent"]
        kind, current = update["type"], self._current
        if current is None:
            return
        if kind in ("text_delta", "thinking_delta"):
            current.block(update["contentIndex"], kind == "thinking_delta").text += update["delta"]
            self.mark(current)
        elif kind == "toolcall_start":
            self.add_tool(update["id"], update["toolName"])
        elif kind == "toolcall_end":
            call = update["toolCall"]
            self.add_tool(call["id"], call["name"], call.get("arguments") or {})

    def _on_message_end(self, event: MessageEndEvent) -> None:
        message = event["message"]
        if message["role"] != "assistant":
            return
        entry = self._current or AssistantEntry(self.palette, self.hide_thinking)
        if self._current is None:
            self._add(entry)
        self._current = None
        entry.set_content(message.get("content") or [])
        self.mark(entry)
        for part in message.get("content") or []:
            if part["type"] == "toolCall":
                self.add_tool(part["id"], part["name"], part.get("arguments") or {})
        reason = message.get("stopReason")
        if reason == "aborted":
            self.add_notice("Operation aborted", "error")
        elif reason == "error":
            self.add_notice(f"Error: {message.get('errorMessage') or 'unknown error'}", "error")

    def _on_tool_execution_start(self, event: ToolExecutionStartEvent) -> None:
        self.add_tool(event["toolCallId"], event["toolName"], event.get("args"))

    def _on_tool_execution_update(self, event: ToolExecutionUpdateEvent) -> None:
        self.add_tool(event["toolCallId"], event["toolName"]).result = event.get("partialResult")

    def _on_tool_execution_end(self, event: ToolExecutionEndEvent) -> None:
        entry = self.add_tool(event["toolCallId"], event["toolName"])
        entry.finish(event.get("result"), bool(event.get("isError")), event.get("durationMs"))
    def _on_compaction_start(self, event: CompactionStartEvent) -> None:
        self.add_notice(f"Compacting context ({event.get('reason', 'manual')})…", "warning")

    def _on_compaction_end(self, event: CompactionEndEvent) -> None:
        if event.get("aborted"):
            self.add_notice("Compaction cancelled", "warning")
        elif event.get("errorMessage"):
            self.add_notice(f"Compaction failed: {event['errorMessage']}", "error")
        else:
            before = (event.get("result") or {}).get("tokensBefore")
            self.add_notice("Context compacted" + (f" (was {before} tokens)" if before else ""), "success")

    def _on_auto_retry_start(self, event: AutoRetryStartEvent) -> None:
        self.add_notice(f"Retrying ({event['attempt']}/{event['maxAttempts']}) in {event['delayMs'] / 1000:.0f}s: "
                        f"{event.get('errorMessage', '')}", "warning")

    def _on_auto_retry_end(self, event: AutoRetryEndEvent) -> None:
        if not event.get("success") and event.get("finalError"):
            self.add_notice(f"Retry failed: {event['finalError']}", "error")

    def _on_entry_appended(self, event: EntryAppendedEvent) -> None:
        """An extension's ``custom`` entry, shown only when its renderer draws it; above the answer
        streaming meanwhile, as in pi."""
        entry = event["entry"]
        drawn = self.render_custom(entry, self.tools_expanded) if entry.get("type") == "custom" else None
        if drawn is None:
            return
        shown = CustomEntry(entry, self.render_custom, self.tools_expanded, drawn)
        if self._current is None:
            self._add(shown)
            return
        at = self.entries.index(self._current)
        self.entries.insert(at, shown)
        del self._starts[at:]
        self.mark(shown)

    def _on_extension_error(self, event: ExtensionErrorEvent) -> None:
        self.add_notice(f"Extension error ({event.get('extensionPath')}): {event.get('error')}", "error")

    # ------------------------------------------------------------------ whole transcripts

    async def restore(self, messages: Sequence[Item]) -> None:
        """Replace everything with ``messages`` (a reopened, resumed or forked session: ``history.items``)."""
        self.entries.clear()
        self._starts.clear()
        self._tools.clear()
        self._current = None
        self._older = list(messages)
        self._load_older()
        self._redraw(follow=True)

    def _load_older(self) -> None:
        """The next ``RESTORED_MESSAGES`` older messages as one entry at the top: a reopened session
        draws its latest messages first, the rest as the reader scrolls up to them."""
        chunk, self._older = self._older[-RESTORED_MESSAGES:], self._older[:-RESTORED_MESSAGES]
        if not chunk:
            return
        entry = HistoryEntry(chunk, self.palette, self.render_custom, self.render_tool)
        entry.hide_thinking, entry.expanded = self.hide_thinking, self.tools_expanded
        self.entries.insert(0, entry)
        self._starts.clear()
        self.mark(entry)

    def _at_top(self) -> bool:
        """Scrolling up from the top loads the next older chunk; True when it did."""
        if not self._older or self.scroll_y > 0:
            return False
        self._load_older()
        self._redraw(follow=False)
        self.scroll_to(y=len(self.entries[0].lines), animate=False)
        return True

    def page_up(self) -> None:
        if not self._at_top():
            self.scroll_page_up(animate=False)

    def page_down(self) -> None:
        self.scroll_page_down(animate=False)

    def _on_mouse_scroll_up(self, event: Any) -> None:
        self._at_top()

    def add_bash(self, command: str, output: str, exit_code: int | None) -> ToolEntry:
        """A user ``!command`` (live output while it runs, ``exit_code`` once done)."""
        entry = ToolEntry(self.palette, "bash", {"command": command})
        entry.expanded = self.tools_expanded
        entry.result = {"content": [{"type": "text", "text": output}]}
        self._add(entry)
        if exit_code is not None:
            self.finish_bash(entry, output, exit_code)
        return entry

    def finish_bash(self, entry: ToolEntry, output: str, exit_code: int | None) -> None:
        suffix = "" if exit_code in (0, None) else f"\nexit code {exit_code}"
        entry.finish({"content": [{"type": "text", "text": output + suffix}]}, exit_code not in (0, None))
        self.mark(entry)

    def set_tools_expanded(self, expanded: bool) -> None:
        """Ctrl+O: every tool call's output in full, or its last lines."""
        self.tools_expanded = expanded
        for entry in self.entries:
            if isinstance(entry, ToolEntry | HistoryEntry | CustomEntry):
                entry.expanded = expanded
                self.mark(entry)

    def set_hide_thinking(self, hide: bool) -> None:
        """Ctrl+T: thinking blocks in full, or one line each."""
        self.hide_thinking = hide
        for entry in self.entries:
            if isinstance(entry, AssistantEntry):
                entry.set_hide_thinking(hide)
                self.mark(entry)
            elif isinstance(entry, HistoryEntry):
                entry.hide_thinking = hide
                self.mark(entry)


def _same_prefix(before: list[Strip], after: list[Strip]) -> int:
    """How many first lines ``after`` kept from ``before`` (the same objects: not rendered again)."""
    count = 0
    for old, new in zip(before, after, strict=False):
        if old is not new:
            break
        count += 1
    return count
