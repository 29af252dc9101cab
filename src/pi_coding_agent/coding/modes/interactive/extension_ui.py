"""``ctx.ui`` of the terminal UI, apart from the dialogs it shows (``dialogs.py``).

The session is built with it before the app starts, so it is imported at launch; the dialogs' screens
and the Textual widgets they use (about 20 M instructions) load with the first dialog.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pi_coding_agent.coding.ui import HeadlessThemes

if TYPE_CHECKING:
    from pi_coding_agent.ai.abort import AbortSignal


class TuiExtensionUI(HeadlessThemes):
    """``ctx.ui`` in the terminal UI: lists are pickers in place of the editor, other dialogs modal screens, notices go to the transcript and footer.

    ``attach`` binds it to the app once the app exists (extensions load before it starts); until
    then dialogs answer their defaults and notices go to stderr.
    """

    has_ui = True
    theme_error = "Theme switching is done with /settings or --theme in this front end"

    def __init__(self) -> None:
        self.app: Any = None
        self.pending_notices: list[tuple[str, str | None]] = []

    def attach(self, app: Any) -> None:
        self.app = app
        for message, kind in self.pending_notices:
            app.show_notice(message, kind)
        self.pending_notices.clear()

    async def select(self, title: str, options: list[str], timeout_ms: int | None = None,
                     signal: AbortSignal | None = None) -> str | None:
        if self.app is None:
            return None
        from pi_coding_agent.coding.modes.interactive.dialogs import choose
        from pi_coding_agent.coding.modes.interactive.picker import Picker

        return await choose(self.app, Picker(title, [(o, o) for o in options], searchable=len(options) > 8),
                            timeout_ms, signal)

    async def confirm(self, title: str, message: str, timeout_ms: int | None = None,
                      signal: AbortSignal | None = None) -> bool:
        if self.app is None:
            return False
        from pi_coding_agent.coding.modes.interactive.dialogs import ConfirmScreen, ask

        return await ask(self.app, ConfirmScreen(title, message), False, timeout_ms, signal)

    async def input(self, title: str, placeholder: str | None = None, timeout_ms: int | None = None,
                    signal: AbortSignal | None = None) -> str | None:
        if self.app is None:
            return None
        from pi_coding_agent.coding.modes.interactive.dialogs import InputScreen, ask

        return await ask(self.app, InputScreen(title, placeholder), None, timeout_ms, signal)

    async def editor(self, title: str, prefill: str | None = None) -> str | None:
        if self.app is None:
            return None
        from pi_coding_agent.coding.modes.interactive.dialogs import EditorScreen, ask

        return await ask(self.app, EditorScreen(title, prefill), None)

    def notify(self, message: str, notify_type: str | None = None) -> None:
        if self.app is None:
            self.pending_notices.append((message, notify_type))
        else:
            self.app.show_notice(message, notify_type)

    def set_status(self, key: str, text: str | None = None) -> None:
        self._call("set_status", key, text)

    def set_widget(self, key: str, lines: list[str] | None = None, placement: str | None = None) -> None:
        self._call("set_widget", key, lines, placement)

    def set_title(self, title: str) -> None:
        self._call("set_terminal_title", title)

    def set_editor_text(self, text: str) -> None:
        self._call("set_editor_text", text)

    def paste_to_editor(self, text: str) -> None:
        self._call("paste_to_editor", text)

    def get_editor_text(self) -> str:
        return "" if self.app is None else str(self.app.editor.text)

    def _call(self, method: str, *args: Any) -> None:
        if self.app is not None:
            target: Callable[..., None] = getattr(self.app, method)
            target(*args)
