"""pi's named key actions, their defaults and ``<agent-dir>/keybindings.json`` overrides.

pi writes keys as ``modifier+key`` (``ctrl+shift+n``, ``pageUp``, ``esc``); Textual names them its
own way (``ctrl+shift+n``, ``pageup``, ``escape``) and in its own modifier order, so both sides
are normalised (lower case, aliases resolved, modifiers sorted) before they are compared.
"""

from __future__ import annotations

import functools
import json
import sys
import unicodedata
from pathlib import Path
from typing import TypeGuard

# the actions this front end implements, with pi 1.6.0's defaults (Linux), in pi's order
DEFAULT_KEYS: dict[str, tuple[str, ...]] = {
    "tui.editor.cursorUp": ("up",),
    "tui.editor.cursorDown": ("down",),
    "tui.editor.historyPrevious": (),
    "tui.editor.historyNext": (),
    "tui.editor.cursorLeft": ("left", "ctrl+b"),
    "tui.editor.cursorRight": ("right", "ctrl+f"),
    "tui.editor.cursorWordLeft": ("alt+left", "ctrl+left", "alt+b"),
    "tui.editor.cursorWordRight": ("alt+right", "ctrl+right", "alt+f"),
    "tui.editor.cursorLineStart": ("home", "ctrl+a"),
    "tui.editor.cursorLineEnd": ("end", "ctrl+e"),
    "tui.editor.jumpForward": ("ctrl+]",),
    "tui.editor.jumpBackward": ("ctrl+alt+]",),
    "tui.editor.pageUp": ("pageup", "ctrl+pageup"),
    "tui.editor.pageDown": ("pagedown", "ctrl+pagedown"),
    "tui.editor.deleteCharBackward": ("backspace",),
    "tui.editor.deleteCharForward": ("delete", "ctrl+d"),
    "tui.editor.deleteWordBackward": ("ctrl+w", "alt+backspace"),
    "tui.editor.deleteWordForward": ("alt+d", "alt+delete"),
    "tui.editor.deleteToLineStart": ("ctrl+u",),
    "tui.editor.deleteToLineEnd": ("ctrl+k",),
    "tui.editor.yank": ("ctrl+y",),
    "tui.editor.yankPop": ("alt+y",),
    "tui.editor.undo": ("ctrl+-",),
    "tui.input.newLine": ("shift+enter", "ctrl+j"),
    "tui.input.submit": ("enter",),
    "tui.input.tab": ("tab",),
    "tui.input.copy": ("ctrl+c",),
    "tui.altScreen.pageUp": ("pageup",),
    "tui.altScreen.pageDown": ("pagedown",),
    "app.interrupt": ("escape",),
    "app.clear": ("ctrl+c",),
    "app.exit": ("ctrl+d",),
    "app.model.select": ("ctrl+l",),
    "app.model.cycleForward": ("ctrl+p",),
    "app.thinking.cycle": ("shift+tab",),
    "app.thinking.toggle": ("ctrl+t",),
    "app.tools.expand": ("ctrl+o",),
    "app.message.copy": ("ctrl+x",),
    "app.message.followUp": ("alt+enter",),
    "app.message.dequeue": ("alt+up",),
    "app.editor.external": ("ctrl+g",),
    "app.clipboard.pasteImage": ("ctrl+v",),
    "app.session.new": (),
    "app.session.tree": (),
    "app.session.fork": (),
    "app.session.resume": (),
}

# the keys of the /scoped-models list (pi's "Scoped Models Selector" actions), bound only there
SELECTOR_KEYS: dict[str, tuple[str, ...]] = {
    "app.models.enableAll": ("ctrl+a",),
    "app.models.clearAll": ("ctrl+x",),
    "app.models.toggleProvider": ("ctrl+p",),
    "app.models.reorderUp": ("alt+up",),
    "app.models.reorderDown": ("alt+down",),
    "app.models.save": ("ctrl+s",),
}

# the order in which the editor tries the actions bound to one key, as pi's editor does: the
# transcript's keys, then the application's (Ctrl+D only on an empty editor; history bindings before
# the other application actions), then the editor's own
PRECEDENCE = ("tui.altScreen.pageUp", "tui.altScreen.pageDown", "app.clipboard.pasteImage", "app.interrupt",
              "app.exit", "tui.editor.historyPrevious", "tui.editor.historyNext",
              *(a for a in DEFAULT_KEYS if a.startswith("app.") and a not in
                ("app.clipboard.pasteImage", "app.interrupt", "app.exit")),
              "tui.input.copy", "tui.editor.undo", "tui.input.tab", "tui.editor.deleteToLineEnd",
              "tui.editor.deleteToLineStart", "tui.editor.deleteWordBackward", "tui.editor.deleteWordForward",
              "tui.editor.deleteCharBackward", "tui.editor.deleteCharForward", "tui.editor.yank",
              "tui.editor.yankPop", "tui.editor.cursorLineStart", "tui.editor.cursorLineEnd",
              "tui.editor.cursorWordLeft", "tui.editor.cursorWordRight", "tui.input.newLine", "tui.input.submit",
              "tui.editor.cursorUp", "tui.editor.cursorDown", "tui.editor.cursorRight", "tui.editor.cursorLeft",
              "tui.editor.pageUp", "tui.editor.pageDown", "tui.editor.jumpForward", "tui.editor.jumpBackward")

# pi's older names in keybindings.json, read as the new ones (unless the file has both)
LEGACY_NAMES: dict[str, str] = {**{a.rsplit(".", 1)[1]: a for a in DEFAULT_KEYS if a.startswith(("tui.editor.", "tui.input."))},
                "interrupt": "app.interrupt", "clear": "app.clear", "exit": "app.exit",
                "cycleThinkingLevel": "app.thinking.cycle", "cycleModelForward": "app.model.cycleForward",
                "selectModel": "app.model.select", "expandTools": "app.tools.expand",
                "toggleThinking": "app.thinking.toggle", "externalEditor": "app.editor.external",
                "followUp": "app.message.followUp", "dequeue": "app.message.dequeue",
                "pasteImage": "app.clipboard.pasteImage", "newSession": "app.session.new",
                "tree": "app.session.tree", "fork": "app.session.fork", "resume": "app.session.resume"}

DESCRIPTIONS: dict[str, str] = {
    "tui.editor.cursorUp": "Cursor up (on the first line: previous prompt)",
    "tui.editor.cursorDown": "Cursor down (on the last line, while browsing: next prompt)",
    "tui.editor.historyPrevious": "Previous prompt",
    "tui.editor.historyNext": "Next prompt",
    "tui.editor.cursorLeft": "Cursor left",
    "tui.editor.cursorRight": "Cursor right",
    "tui.editor.cursorWordLeft": "Cursor a word left",
    "tui.editor.cursorWordRight": "Cursor a word right",
    "tui.editor.cursorLineStart": "Line start",
    "tui.editor.cursorLineEnd": "Line end",
    "tui.editor.jumpForward": "Jump forward to the next character typed",
    "tui.editor.jumpBackward": "Jump backward to the next character typed",
    "tui.editor.pageUp": "Cursor a page up",
    "tui.editor.pageDown": "Cursor a page down",
    "tui.editor.deleteCharBackward": "Delete the character before the cursor",
    "tui.editor.deleteCharForward": "Delete the character at the cursor",
    "tui.editor.deleteWordBackward": "Delete the word before the cursor (kept for yank)",
    "tui.editor.deleteWordForward": "Delete the word after the cursor (kept for yank)",
    "tui.editor.deleteToLineStart": "Delete to line start (kept for yank)",
    "tui.editor.deleteToLineEnd": "Delete to line end (kept for yank)",
    "tui.editor.yank": "Paste the last deleted text",
    "tui.editor.yankPop": "After a yank: replace it with the text deleted before",
    "tui.editor.undo": "Undo",
    "tui.input.newLine": "Insert a new line",
    "tui.input.submit": "Send (steer while the agent works)",
    "tui.input.tab": "Complete a command or path",
    "tui.input.copy": "Copy the selection (with a selection)",
    "tui.altScreen.pageUp": "Scroll the transcript up a page (at the top: older messages)",
    "tui.altScreen.pageDown": "Scroll the transcript down a page",
    "app.interrupt": "Abort the run / close a dialog (twice on an empty editor: doubleEscapeAction)",
    "app.clear": "Clear the editor; twice: quit",
    "app.exit": "Quit (empty editor)",
    "app.model.select": "Choose a model",
    "app.model.cycleForward": "Next model",
    "app.thinking.cycle": "Next thinking level",
    "app.thinking.toggle": "Show or hide thinking blocks",
    "app.tools.expand": "Expand or collapse tool output",
    "app.message.copy": "Copy the last answer",
    "app.message.followUp": "Queue a follow-up",
    "app.message.dequeue": "Put queued messages back in the editor",
    "app.editor.external": "Edit the prompt in the external editor (externalEditor, $VISUAL, $EDITOR)",
    "app.clipboard.pasteImage": "Paste an image (saved to a temporary file) or text from the clipboard",
    "app.session.new": "New session",
    "app.session.tree": "Session tree",
    "app.session.fork": "Fork",
    "app.session.resume": "Resume a session",
}

_ALIASES = {"esc": "escape", "return": "enter", "del": "delete",
            # Textual's names of the symbol keys (``ctrl+]`` comes as ``ctrl+right_square_bracket``)
            **{unicodedata.name(c).lower().replace(" ", "_").replace("-", "_"): c for c in "`-=[]\\;',./!@#$%^&*()_+|~{}:<>?\""},
            "minus": "-", "underscore": "_", "slash": "/", "backslash": "\\", "at": "@", "plus": "+"}


@functools.lru_cache(maxsize=512)  # every key typed is normalised, from a small set
def normalise(key: str) -> str:
    """``Ctrl+Shift+PageUp`` and ``shift+ctrl+pageup`` -> ``ctrl+shift+pageup``; Textual's ``ctrl+underscore``
    -> ``ctrl+-`` (a terminal sends the same byte for Ctrl+- and Ctrl+_)."""
    text = key.strip().lower()
    parts = [p for p in text.split("+") if p]
    if text.endswith("+") or not parts:
        parts.append("+")
    *mods, name = parts
    name = _ALIASES.get(name, name)
    if name == "_" and "ctrl" in mods:
        name = "-"
    return "+".join([*sorted(set(mods)), name])


def _is_keys(value: object) -> TypeGuard[list[str] | str]:
    """A key or a list of keys: pi drops any other entry (a number, a list holding one) and keeps the default."""
    return isinstance(value, str) or (isinstance(value, list) and all(isinstance(k, str) for k in value))


class KeyMap:
    """Which action a Textual key event triggers."""

    def __init__(self, overrides: dict[str, list[str] | str] | None = None) -> None:
        self.keys: dict[str, tuple[str, ...]] = dict(DEFAULT_KEYS)
        self.selector_keys: dict[str, tuple[str, ...]] = dict(SELECTOR_KEYS)  # not in ``keys``: they act in one list
        for action, value in (overrides or {}).items():
            for table in (self.keys, self.selector_keys):
                if action in table:
                    table[action] = (value,) if isinstance(value, str) else tuple(value)
        self._normal = {action: {normalise(k) for k in keys} for action, keys in self.keys.items()}
        self._by_key: dict[str, list[str]] = {}  # normalised key -> its actions in ``PRECEDENCE`` order
        for action in PRECEDENCE:
            for key in self._normal.get(action, ()):
                self._by_key.setdefault(key, []).append(action)

    @classmethod
    def load(cls, agent_dir: Path) -> KeyMap:
        """The defaults with ``keybindings.json``'s entries; a broken file is named on stderr and ignored."""
        path = agent_dir / "keybindings.json"
        try:
            data = json.loads(path.read_text(encoding="utf-8-sig"))  # an editor's BOM, as pi strips it
        except FileNotFoundError:
            return cls()
        except (OSError, ValueError) as err:
            print(f"Warning: ignoring {path}: {err}", file=sys.stderr)
            return cls()
        if not isinstance(data, dict):
            return cls()
        renamed: dict[str, object] = {LEGACY_NAMES.get(str(k), str(k)): v for k, v in data.items()
                                      if LEGACY_NAMES.get(str(k)) not in data}
        return cls({k: v for k, v in renamed.items() if _is_keys(v)})

    def matches(self, action: str, key: str) -> bool:
        return normalise(key) in self._normal.get(action, set())

    def action_for(self, key: str) -> str | None:
        return next(iter(self.actions_for(key)), None)

    def actions_for(self, key: str) -> list[str]:
        """Every action bound to ``key``, in the order the editor tries them (``PRECEDENCE``); asked on
        every key, so looked up in a table built once (the list is the table's: not to be changed)."""
        return self._by_key.get(normalise(key), [])

    def hotkeys(self) -> list[tuple[str, str]]:
        """(keys, description) of every bound action, for ``/hotkeys``."""
        return [(", ".join(keys), DESCRIPTIONS.get(action, action)) for action, keys in self.keys.items() if keys]
