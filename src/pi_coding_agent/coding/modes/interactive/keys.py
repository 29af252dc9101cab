"""pi's named key actions, their defaults and ``<agent-dir>/keybindings.json`` overrides.

pi writes keys as ``modifier+key`` (``ctrl+shift+n``, ``pageUp``, ``esc``); Textual names them its
own way (``ctrl+shift+n``, ``pageup``, ``escape``) and in its own modifier order, so both sides
are normalised (lower case, aliases resolved, modifiers sorted) before they are compared.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

# the actions this front end implements, with pi 1.6.0's defaults
DEFAULT_KEYS: dict[str, tuple[str, ...]] = {
    "tui.input.newLine": ("shift+enter", "ctrl+j"),
    "tui.input.submit": ("enter",),
    "tui.input.tab": ("tab",),
    "tui.editor.historyPrevious": (),
    "tui.editor.historyNext": (),
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

DESCRIPTIONS: dict[str, str] = {
    "tui.input.newLine": "Insert a new line",
    "tui.input.submit": "Send (steer while the agent works)",
    "tui.input.tab": "Complete a command or path",
    "tui.editor.historyPrevious": "Previous prompt",
    "tui.editor.historyNext": "Next prompt",
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

_ALIASES = {"esc": "escape", "return": "enter", "pageup": "pageup", "pagedown": "pagedown", "del": "delete"}


def normalise(key: str) -> str:
    """``Ctrl+Shift+PageUp`` and ``shift+ctrl+pageup`` -> ``ctrl+shift+pageup``."""
    parts = [p for p in key.strip().lower().split("+") if p] or ["+"]
    *mods, name = parts
    return "+".join([*sorted(set(mods)), _ALIASES.get(name, name)])


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

    @classmethod
    def load(cls, agent_dir: Path) -> KeyMap:
        """The defaults with ``keybindings.json``'s entries; a broken file is named on stderr and ignored."""
        path = agent_dir / "keybindings.json"
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            return cls()
        except (OSError, ValueError) as err:
            print(f"Warning: ignoring {path}: {err}", file=sys.stderr)
            return cls()
        if not isinstance(data, dict):
            return cls()
        return cls({k: v for k, v in data.items() if isinstance(v, (str, list))})

    def matches(self, action: str, key: str) -> bool:
        return normalise(key) in self._normal.get(action, set())

    def action_for(self, key: str) -> str | None:
        normal = normalise(key)
        return next((action for action, keys in self._normal.items() if normal in keys), None)

    def hotkeys(self) -> list[tuple[str, str]]:
        """(keys, description) of every bound action, for ``/hotkeys``."""
        return [(", ".join(keys), DESCRIPTIONS.get(action, action)) for action, keys in self.keys.items() if keys]
