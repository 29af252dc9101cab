"""The one list picker of the terminal UI (sessions, models, extension ``select``...), shown in place
of the editor as pi shows its selectors (``dialogs.choose`` shows it and waits for the answer).

``Picker`` draws itself line by line (Textual's line API): a title, the search line when it has one,
at most ``ROWS`` options around the cursor, and a ``(n/total)`` counter. Opening it lays out the
screen once, as any change of the editor's height does; a key repaints its own few lines, and lays
the screen out only when a search changes how many rows it shows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.geometry import Size
from textual.strip import Strip
from textual.widget import Widget

from pi_coding_agent.coding.modes.interactive.completion import fuzzy_score

ROWS = 10  # options shown at once, as in pi's selectors
CURSOR, BLANK = "› ", "  "


def one_line_paste(text: str) -> str:
    """Pasted text for a one-line field, as pi's fields take it: line ends dropped, a tab as four spaces."""
    return text.replace("\r", "").replace("\n", "").replace("\t", "    ")


class Picker(Widget, can_focus=True):
    """(id, label) options in the order given, filtered as the user types when ``searchable``; Enter
    answers the id under the cursor, Escape or Ctrl+C None (``on_answer``, set by whoever shows it)."""

    DEFAULT_CSS = """
    Picker { width: 1fr; height: auto; padding: 0 1; border-top: solid $accent; border-bottom: solid $accent; }
    Picker > .picker--title { color: $accent; text-style: bold; }
    Picker > .picker--cursor { color: $accent; text-style: bold; }
    Picker > .picker--muted { color: $text-muted; }
    """
    COMPONENT_CLASSES: ClassVar[set[str]] = {"picker--title", "picker--cursor", "picker--muted"}

    def __init__(self, title: str, options: list[tuple[str, str]], searchable: bool = True,
                 highlighted: int = 0, query: str = "") -> None:
        """``highlighted``: the option first under the cursor; ``query``: the search it opens with."""
        super().__init__()
        self.title_lines = title.split("\n")
        self.options = list(options)
        self.searchable = searchable
        self.query_text = query
        self.on_answer: Callable[[str | None], object] = lambda value: None
        self.shown: list[int] = []  # indexes into ``options`` that the search keeps, in display order
        self.cursor = 0  # index into ``shown``
        self.top = 0  # the first of ``shown`` on screen
        self._styles: dict[str, Style] = {}
        self._filter()
        self.cursor = min(highlighted, max(len(self.shown) - 1, 0))

    # ------------------------------------------------------------------ the list

    def _filter(self) -> None:
        query = self.query_text
        if not query:
            self.shown = list(range(len(self.options)))
        else:
            scored = [(score, i) for i, (_, label) in enumerate(self.options)
                      if (score := fuzzy_score(query, label)) is not None]
            self.shown = [i for _, i in sorted(scored)]
        self.cursor = self.top = 0

    def extend(self, options: list[tuple[str, str]]) -> None:
        """More options (a list loaded page by page): appended, or searched with the rest; the cursor
        stays where it is."""
        first, lines = len(self.options), self._line_count()
        self.options += options
        cursor = self.cursor
        if self.query_text:
            self._filter()
        else:
            self.shown += range(first, len(self.options))
        self.cursor = min(cursor, max(len(self.shown) - 1, 0))
        self._changed(lines)

    @property
    def highlighted_id(self) -> str | None:
        return self.options[self.shown[self.cursor]][0] if self.shown else None

    def _visible(self) -> int:
        return max(1, min(ROWS, len(self.shown)))

    def _line_count(self) -> int:
        counter = 1 if self.searchable or len(self.shown) > ROWS else 0
        return len(self.title_lines) + (1 if self.searchable else 0) + self._visible() + counter

    def _changed(self, lines_before: int | None = None) -> None:
        """Repaint; lay the screen out again only when the height changed."""
        rows = self._visible()
        self.top = min(max(self.top, self.cursor - rows + 1), self.cursor)
        self.refresh(layout=lines_before is not None and lines_before != self._line_count())

    # ------------------------------------------------------------------ keys

    def on_mount(self) -> None:
        self.focus()

    def watch_has_focus(self, _has_focus: bool) -> None:
        """No rule styles a focused picker: its styles, applied as it mounted, stay (Textual would apply
        them all again, half a millisecond as it opens)."""

    async def _on_key(self, event: events.Key) -> None:
        event.stop()
        event.prevent_default()
        key = event.key
        lines = self._line_count()
        if key == "enter":
            if self.shown:  # with no match, Enter waits for a better search
                self.on_answer(self.highlighted_id)
        elif key in ("escape", "ctrl+c"):  # pi's tui.select.cancel keys
            self.on_answer(None)
        elif key in MOVES:
            self.move(MOVES[key](self))
        elif self.searchable and key == "backspace" and self.query_text:
            self.search(self.query_text[:-1])
        elif self.searchable and event.is_printable and event.character:
            self.search(self.query_text + event.character)
        self._changed(lines)

    def on_paste(self, event: events.Paste) -> None:
        """Pasted text joins the search on one line, as pi's search field takes it (line ends dropped,
        a tab as four spaces), and without control characters, which pi would draw raw."""
        event.stop()
        if self.searchable:
            lines = self._line_count()
            self.search(self.query_text + "".join(ch for ch in one_line_paste(event.text) if ord(ch) >= 32))
            self._changed(lines)

    def move(self, to: int) -> None:
        self.cursor = max(0, min(to, len(self.shown) - 1))

    def search(self, query: str) -> None:
        self.query_text = query
        self._filter()

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        first = len(self.title_lines) + (1 if self.searchable else 0)
        if offset is None or not 0 <= offset.y - first < self._visible():
            return
        index = self.top + offset.y - first
        if index < len(self.shown):
            self.cursor = index
            self.on_answer(self.highlighted_id)

    def on_mouse_scroll_down(self, event: events.MouseScrollDown) -> None:
        event.stop()
        self.move(self.cursor + 1)
        self._changed()

    def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        event.stop()
        self.move(self.cursor - 1)
        self._changed()

    # ------------------------------------------------------------------ drawing

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return self._line_count()

    def _size_updated(self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True) -> bool:
        """A size from the layout under way: its virtual size (nothing scrolls here) is set without the
        reactive's second layout of the screen."""
        return super()._size_updated(size, virtual_size, container_size, layout=False)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles.clear()

    def _style(self, name: str) -> Style:
        style = self._styles.get(name)
        if style is None:
            style = self._styles[name] = self.rich_style if name == "" else self.get_component_rich_style(name)
        return style

    def render_line(self, y: int) -> Strip:
        text, style = self._line(y)
        width = self.content_region.width
        return Strip([Segment(text, self._style(style))]).crop(0, width).extend_cell_length(width, self._style(""))

    def _line(self, y: int) -> tuple[str, str]:
        """Line ``y``'s text and component class ("" for the widget's own style)."""
        if y < len(self.title_lines):
            return self.title_lines[y], "picker--title"
        y -= len(self.title_lines)
        if self.searchable:
            if y == 0:
                return f"> {self.query_text}█", ""
            y -= 1
        if y < self._visible():
            if not self.shown:
                return "  No matches", "picker--muted"
            index = self.top + y
            if index >= len(self.shown):
                return "", ""
            label = self.options[self.shown[index]][1]
            return (CURSOR + label, "picker--cursor") if index == self.cursor else (BLANK + label, "")
        return f"  ({self.cursor + 1 if self.shown else 0}/{len(self.shown)})", "picker--muted"


MOVES: dict[str, Callable[[Picker], int]] = {
    "up": lambda p: p.cursor - 1, "down": lambda p: p.cursor + 1,
    "pageup": lambda p: p.cursor - ROWS, "pagedown": lambda p: p.cursor + ROWS,
    "home": lambda p: 0, "end": lambda p: len(p.shown) - 1,
}
