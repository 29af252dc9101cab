"""The prompt editor: a multi-line text area with prompt history, pi's keys and a completion menu.

Every key first goes through the key map (``keys.py``): editor actions (submit, new line, follow-up)
are handled here, application actions (abort, quit, model picker...) are posted to the app as
``Editor.Action``; anything else is ordinary text editing. Large pastes are collapsed to a marker
that expands back when the prompt is sent, as pi does.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import ClassVar

from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Region
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import OptionList, TextArea
from textual.widgets.option_list import Option

from pi_coding_agent.coding.modes.interactive import completion
from pi_coding_agent.coding.modes.interactive.editing import EDIT_METHODS, EditingActions
from pi_coding_agent.coding.modes.interactive.keys import KeyMap
from pi_coding_agent.coding.modes.interactive.main_screen import MainScreen

PASTE_COLLAPSE_LINES = 10
PASTE_COLLAPSE_CHARS = 1000
_PASTE_MARKER = re.compile(r"\[paste #(\d+) (?:\+\d+ lines|\d+ chars)\]")
# a control byte some terminals send inside a paste as a CSI-u Ctrl+letter key (ESC [ code ; 5 u)
_CSI_U_CTRL = re.compile(r"\x1b\[(\d+);5u")
EDITOR_ACTIONS = ("tui.input.submit", "tui.input.newLine", "tui.input.tab", "app.message.followUp",
                  "tui.editor.historyPrevious", "tui.editor.historyNext")


class Editor(EditingActions, inherit_bindings=False):
    """Posts ``Submitted`` (Enter, or the follow-up key) and ``Action`` (application keys).

    Of Textual's text area bindings only the selection keys stay: every other key is one of pi's
    actions (``keys.py``), rebindable in ``keybindings.json``.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("shift+left", "cursor_left(True)", show=False), Binding("shift+right", "cursor_right(True)", show=False),
        Binding("shift+up", "cursor_up(True)", show=False), Binding("shift+down", "cursor_down(True)", show=False),
        Binding("shift+home", "cursor_line_start(True)", show=False),
        Binding("shift+end", "cursor_line_end(True)", show=False),
        Binding("ctrl+shift+left", "cursor_word_left(True)", show=False),
        Binding("ctrl+shift+right", "cursor_word_right(True)", show=False),
        Binding("f6", "select_line", show=False), Binding("f7", "select_all", show=False),
    ]

    DEFAULT_CSS = """
    Editor { height: auto; max-height: 12; min-height: 1; border: none; border-top: solid $border-muted;
             border-bottom: solid $border-muted; padding: 0 1; background: $background; }
    Editor:focus { border: none; border-top: solid $accent; border-bottom: solid $accent; }
    """

    class Submitted(Message):
        """``held``: the app's screen updates, held from the Enter on (``release`` ends the hold)."""

        def __init__(self, text: str, follow_up: bool, held: AbstractContextManager[None]) -> None:
            super().__init__()
            self.text = text
            self.follow_up = follow_up
            self.held = held

        def release(self) -> None:
            self.held.__exit__(None, None, None)

    class Action(Message):
        """``empty``: whether the editor was empty when the key came (the app reads it after later keys ran)."""

        def __init__(self, action: str, empty: bool) -> None:
            super().__init__()
            self.action = action
            self.empty = empty

    def __init__(self, keymap: KeyMap, menu: OptionList, complete: Callable[[str], list[completion.Candidate]]) -> None:
        super().__init__(soft_wrap=True, show_line_numbers=False, tab_behavior="focus", highlight_cursor_line=False,
                         id="editor")
        self.keymap = keymap
        self.menu = menu
        self.complete = complete
        self.prompt_history: list[str] = []
        self._history_index: int | None = None
        self._pastes: dict[int, str] = {}
        # an extension shortcut's action for a key (``extension_hooks``), looked up before the key map
        self.shortcut_action: Callable[[str], str | None] = lambda key: None
        self._styled: object = None  # the theme object last filled from the CSS (``render_lines``)

    # ------------------------------------------------------------------ drawing

    def render_lines(self, crop: Region) -> list[Strip]:
        """``TextArea`` fills its theme from the CSS on every render: six component styles, whose cache
        every refresh (every typed key) clears, a third of a keypress frame. Once per theme object and
        change of the CSS is enough."""
        if self._styled is self._theme:
            return Widget.render_lines(self, crop)
        self._styled = self._theme
        return super().render_lines(crop)

    def notify_style_update(self) -> None:
        self._styled = None
        super().notify_style_update()

    def watch_has_focus(self, has_focus: bool) -> None:
        """Hidden (a picker in its place), it keeps its focused look until it shows, and is focused,
        again: restyling a ``TextArea`` costs about a millisecond, in the frame that opens the picker."""
        if self.display or has_focus:
            super().watch_has_focus(has_focus)

    # ------------------------------------------------------------------ keys

    async def _on_key(self, event: events.Key) -> None:
        """Every key acts before this returns, the editor's own included: left to bubble up to the app
        (as Textual's text area leaves its bindings), Ctrl+U ran after the keys read with it (``/re``,
        then Ctrl+U and ``/resume`` in one read, sent ``/re/resume``)."""
        if self.menu.display and self._menu_key(event.key):
            event.stop()
            event.prevent_default()
            return
        self.previous_edit, self.last_edit = self.last_edit, None
        if self.jumping is not None and self._jump_key(event):
            event.stop()
            event.prevent_default()
            return
        action = self.shortcut_action(event.key) or self._action(event.key)
        if action is None:
            if not event.is_printable and await self._run_binding(event):
                return
            if event.is_printable:
                self.typed((event.character or " ").isspace())
            await super()._on_key(event)
            if event.is_printable and isinstance(self.screen, MainScreen):
                self.screen.paint_now(self)  # the character on the terminal before anything else runs
            return
        event.stop()
        event.prevent_default()
        if action != "tui.editor.undo":
            self.history.checkpoint()
        if action == "tui.input.newLine":
            self.insert("\n")
        elif action in ("tui.input.submit", "app.message.followUp"):
            self._submit(follow_up=action == "app.message.followUp")
        elif action == "tui.input.tab":
            self.refresh_menu()
        elif action == "tui.editor.historyPrevious":
            self.browse_history(-1)
        elif action == "tui.editor.historyNext":
            self.browse_history(1)
        elif action in EDIT_METHODS:
            getattr(self, EDIT_METHODS[action])()
        else:
            self._app_action(action)

    def _action(self, key: str) -> str | None:
        """The first action bound to ``key`` that applies now: Ctrl+D quits on an empty editor only (else
        it deletes forward), Ctrl+C copies a selection rather than clear the editor."""
        for action in self.keymap.actions_for(key):
            if action == "app.exit" and self.text:
                continue
            if action == "app.clear" and self.selection.start != self.selection.end:
                continue
            return action
        return None

    def _jump_key(self, event: events.Key) -> bool:
        """The key after a jump key: a character is the target; the jump key again cancels; any other
        key cancels and then acts (False)."""
        direction, self.jumping = self.jumping, None
        if {"tui.editor.jumpForward", "tui.editor.jumpBackward"} & set(self.keymap.actions_for(event.key)):
            return True
        if event.is_printable and event.character:
            self.jump_to(event.character, direction or "forward")
            return True
        return False

    def _app_action(self, action: str) -> None:
        """What an application key does to the editor happens now (Ctrl+C clears it), the rest in the app,
        told whether the editor was empty (Ctrl+D comes here on an empty editor only)."""
        empty = not self.text
        if action == "app.clear" and not empty:
            self.load_text("")
        self.post_message(self.Action(action, empty))

    async def _run_binding(self, event: events.Key) -> bool:
        """A key of the selection bindings below, run now."""
        bindings = self._bindings.key_to_bindings.get(event.key)
        if not bindings:
            return False
        event.stop()
        event.prevent_default()
        await self.run_action(bindings[0].action)
        return True

    def _menu_key(self, key: str) -> bool:
        """Up/Down move in the open completion menu, Tab/Enter take its choice, Escape closes it."""
        if key == "up":
            self.menu.action_cursor_up()
        elif key == "down":
            self.menu.action_cursor_down()
        elif key == "tab":
            self.accept_completion()
        elif key == "enter":  # a command runs at once, a path is inserted
            self.accept_completion()
            if self.text.startswith("/") and "\n" not in self.text:
                self._submit(follow_up=False)
        elif key == "escape":
            self.menu.display = False
        else:
            return False
        return True

    def action_cursor_up(self, select: bool = False) -> None:
        """pi's Up on the top row: the previous prompt (on an empty editor, while browsing, or at column 0),
        else the line start."""
        location = self.cursor_location
        if select or location[0] or not self.navigator.is_first_wrapped_line(location):
            super().action_cursor_up(select)
        elif self._history_index is not None or not self.text or location[1] == 0:
            self.browse_history(-1)
        else:
            self.line_start()

    def action_cursor_down(self, select: bool = False) -> None:
        """pi's Down on the bottom row: the next prompt while browsing, else the line end."""
        location = self.cursor_location
        if select or location[0] < self.document.line_count - 1 or not self.navigator.is_last_wrapped_line(location):
            super().action_cursor_down(select)
        elif self._history_index is not None:
            self.browse_history(1)
        else:
            self.line_end()

    # ------------------------------------------------------------------ history and submission

    def browse_history(self, step: int) -> None:
        if not self.prompt_history:
            return
        index = len(self.prompt_history) if self._history_index is None else self._history_index
        index = max(0, min(len(self.prompt_history), index + step))
        self._history_index = None if index == len(self.prompt_history) else index
        self.load_text("" if self._history_index is None else self.prompt_history[index])
        self.move_cursor(self.document.end)

    def _submit(self, follow_up: bool) -> None:
        text = self.expanded_text()
        if not text.strip():
            return
        if not self.prompt_history or self.prompt_history[-1] != text:
            self.prompt_history.append(text)
        self._history_index = None
        self._pastes.clear()
        held = self.app.batch_update()  # the cleared editor waits for what the line opens (``PiApp``)
        held.__enter__()
        self.load_text("")
        self.menu.display = False
        self.post_message(self.Submitted(text, follow_up, held))

    def expanded_text(self) -> str:
        """The editor text with paste markers replaced by what was pasted."""
        return _PASTE_MARKER.sub(lambda m: self._pastes.get(int(m.group(1)), m.group(0)), self.text)

    async def _on_paste(self, event: events.Paste) -> None:
        """Handled here alone: ``TextArea``'s own handler would insert the text a second time."""
        event.stop()
        event.prevent_default()
        if not self.read_only:
            self.paste(event.text)

    def paste(self, text: str) -> None:
        """Insert pasted text as pi does: cleaned (``clean_paste``), after a space when it is a path
        typed onto a word, and as a ``[paste #N ...]`` marker past 10 lines or 1000 characters."""
        text = clean_paste(text)
        if not text:
            return
        row, column = self.cursor_location
        if text[0] in "/~." and re.fullmatch(r"[A-Za-z0-9_]", self.document.get_line(row)[column - 1:column]):
            text = " " + text
        lines = text.count("\n") + 1
        if lines > PASTE_COLLAPSE_LINES or len(text) > PASTE_COLLAPSE_CHARS:
            number = len(self._pastes) + 1
            self._pastes[number] = text
            size = f"+{lines} lines" if lines > PASTE_COLLAPSE_LINES else f"{len(text)} chars"
            text = f"[paste #{number} {size}]"
        self.replace(text, *self.selection, maintain_selection_offset=False)

    # ------------------------------------------------------------------ completion

    def _on_text_area_changed(self, event: TextArea.Changed) -> None:
        self.refresh_menu(only_if_open_or_trigger=True)

    def _before_cursor(self) -> str:
        return self.get_text_range((0, 0), self.cursor_location)

    def refresh_menu(self, only_if_open_or_trigger: bool = False) -> None:
        before = self._before_cursor()
        if only_if_open_or_trigger and not self.menu.display and not _is_trigger(before):
            return
        items = self.complete(before)
        self.menu.clear_options()
        if not items:
            self.menu.display = False
            return
        self.menu.add_options([Option(f"{text}  {description}".rstrip(), id=text) for text, description in items])
        self.menu.highlighted = 0
        self.menu.display = True

    def accept_completion(self) -> None:
        index = self.menu.highlighted
        self.menu.display = False
        if index is None:
            return
        choice = self.menu.get_option_at_index(index).id or ""
        before = self._before_cursor()
        if before.startswith("/") and " " not in before:
            self.replace(choice + " ", (0, 0), self.cursor_location)
            return
        token = completion.at_token(before)
        if token is not None:
            row, column = self.cursor_location
            self.replace(choice + " ", (row, column - len(token)), self.cursor_location)


def _is_trigger(before: str) -> bool:
    """Typing opens the menu for a ``/command`` at the start or an ``@path``."""
    return (before.startswith("/") and " " not in before and "\n" not in before) or completion.at_token(before) is not None


def clean_paste(text: str) -> str:
    """Pasted text as pi keeps it: CSI-u Ctrl+letter keys back to their control byte, CR LF and CR as
    LF, a tab as four spaces, then no control character but the newline (a pasted escape sequence
    is text, never a key)."""
    def control(match: re.Match[str]) -> str:
        code = int(match.group(1))
        if 97 <= code <= 122:
            return chr(code - 96)
        return chr(code - 64) if 65 <= code <= 90 else match.group(0)

    text = _CSI_U_CTRL.sub(control, text).replace("\r\n", "\n").replace("\r", "\n").replace("\t", "    ")
    return "".join(ch for ch in text if ch == "\n" or ord(ch) >= 32)
