"""pi's editing actions on Textual's text area: word moves and deletions by pi's word rules, kills
kept in a kill ring (consecutive kills join into one entry), yank and yank-pop, the character jump.

Textual's own versions differ (its Ctrl+K deletes an empty line, its word rule is a regex, it keeps
no kill ring), so the editor runs these for pi's action names instead.
"""

from __future__ import annotations

from textual.document._document import Location
from textual.widgets import TextArea


def _kind(char: str) -> str:
    """A space, a word character (a letter, a digit, ``_``) or other (punctuation and symbols): a
    word move crosses one run of the same kind."""
    if char.isspace():
        return "space"
    return "word" if char.isalnum() or char == "_" else "other"


def word_left(line: str, column: int) -> int:
    """Back over spaces, then over one run of word characters or of punctuation."""
    while column > 0 and line[column - 1].isspace():
        column -= 1
    kind = _kind(line[column - 1]) if column else ""
    while column > 0 and _kind(line[column - 1]) == kind:
        column -= 1
    return column


def word_right(line: str, column: int) -> int:
    while column < len(line) and line[column].isspace():
        column += 1
    kind = _kind(line[column]) if column < len(line) else ""
    while column < len(line) and _kind(line[column]) == kind:
        column += 1
    return column


class EditingActions(TextArea):
    """``previous_edit`` is what the key before did ("type", "kill", "yank" or None), set by the key handler:
    a kill after a kill joins the same kill-ring entry, yank-pop works right after a yank only."""

    def __init__(self, **options: object) -> None:
        super().__init__(**options)  # type: ignore[arg-type]
        self.kill_ring: list[str] = []
        self.previous_edit: str | None = None
        self.last_edit: str | None = None
        self.jumping: str | None = None  # "forward" / "backward": the next character typed is the target
        self._yank_start: Location = (0, 0)

    def typed(self, space: bool) -> None:
        """Undo steps as pi's: a run of typed word characters is one, each space starts a new one, and
        so does every other edit (the key handler ends the step before each action)."""
        if space or self.previous_edit != "type":
            self.history.checkpoint()
        self.last_edit = "type"

    def _line(self, row: int) -> str:
        return self.document.get_line(row)

    def _kill(self, start: Location, end: Location, backward: bool) -> None:
        text = self.get_text_range(start, end)
        if not text:
            return
        if self.previous_edit == "kill" and self.kill_ring:
            last = self.kill_ring.pop()
            text = text + last if backward else last + text
        self.kill_ring.append(text)
        self.delete(start, end)
        self.move_cursor(start)
        self.last_edit = "kill"

    def _line_break_before(self) -> Location | None:
        row, _ = self.cursor_location
        return (row - 1, len(self._line(row - 1))) if row else None

    def _line_break_after(self) -> Location | None:
        row, _ = self.cursor_location
        return (row + 1, 0) if row + 1 < self.document.line_count else None

    def kill_to_line_start(self) -> None:
        row, column = self.cursor_location
        start = (row, 0) if column else self._line_break_before()
        if start is not None:
            self._kill(start, (row, column), backward=True)

    def kill_to_line_end(self) -> None:
        row, column = self.cursor_location
        end = (row, len(self._line(row))) if column < len(self._line(row)) else self._line_break_after()
        if end is not None:
            self._kill((row, column), end, backward=False)

    def kill_word_backward(self) -> None:
        row, column = self.cursor_location
        start = (row, word_left(self._line(row), column)) if column else self._line_break_before()
        if start is not None:
            self._kill(start, (row, column), backward=True)

    def kill_word_forward(self) -> None:
        row, column = self.cursor_location
        line = self._line(row)
        end = (row, word_right(line, column)) if column < len(line) else self._line_break_after()
        if end is not None:
            self._kill((row, column), end, backward=False)

    def yank(self) -> None:
        if self.kill_ring:
            self._yank_start = self.cursor_location
            self.insert(self.kill_ring[-1])
            self.last_edit = "yank"

    def yank_pop(self) -> None:
        """The text just yanked replaced by the ring's entry before it (the ring turns by one)."""
        if self.previous_edit != "yank" or len(self.kill_ring) < 2:
            return
        self.delete(self._yank_start, self.cursor_location)
        self.kill_ring.insert(0, self.kill_ring.pop())
        self.move_cursor(self._yank_start)
        self.insert(self.kill_ring[-1])
        self.last_edit = "yank"

    def word_left(self) -> None:
        row, column = self.cursor_location
        self.move_cursor((row, word_left(self._line(row), column)) if column else self._line_break_before() or (0, 0))

    def word_right(self) -> None:
        row, column = self.cursor_location
        line = self._line(row)
        self.move_cursor((row, word_right(line, column)) if column < len(line) else self._line_break_after() or (row, column))

    def line_start(self) -> None:
        self.move_cursor((self.cursor_location[0], 0))

    def line_end(self) -> None:
        row = self.cursor_location[0]
        self.move_cursor((row, len(self._line(row))))

    def jump_forward(self) -> None:
        self.jumping = "forward"

    def jump_backward(self) -> None:
        self.jumping = "backward"

    def jump_to(self, char: str, direction: str) -> None:
        """The next (or previous) ``char`` after (before) the cursor, on any line; none: the cursor stays."""
        row, column = self.cursor_location
        rows = range(row, self.document.line_count) if direction == "forward" else range(row, -1, -1)
        for index in rows:
            line = self._line(index)
            if direction == "forward":
                found = line.find(char, column + 1 if index == row else 0)
            else:
                found = line.rfind(char, 0, column if index == row else len(line))
            if found >= 0:
                self.move_cursor((index, found))
                return


# pi's editor actions -> the text area's method that does them (history and submission: the editor's)
EDIT_METHODS = {
    "tui.editor.cursorUp": "action_cursor_up", "tui.editor.cursorDown": "action_cursor_down",
    "tui.editor.cursorLeft": "action_cursor_left", "tui.editor.cursorRight": "action_cursor_right",
    "tui.editor.cursorWordLeft": "word_left", "tui.editor.cursorWordRight": "word_right",
    "tui.editor.cursorLineStart": "line_start", "tui.editor.cursorLineEnd": "line_end",
    "tui.editor.jumpForward": "jump_forward", "tui.editor.jumpBackward": "jump_backward",
    "tui.editor.pageUp": "action_cursor_page_up", "tui.editor.pageDown": "action_cursor_page_down",
    "tui.editor.deleteCharBackward": "action_delete_left", "tui.editor.deleteCharForward": "action_delete_right",
    "tui.editor.deleteWordBackward": "kill_word_backward", "tui.editor.deleteWordForward": "kill_word_forward",
    "tui.editor.deleteToLineStart": "kill_to_line_start", "tui.editor.deleteToLineEnd": "kill_to_line_end",
    "tui.editor.yank": "yank", "tui.editor.yankPop": "yank_pop", "tui.editor.undo": "action_undo",
    "tui.input.copy": "action_copy",
}
