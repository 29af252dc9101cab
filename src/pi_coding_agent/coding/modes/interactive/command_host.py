"""What slash commands use of the app, and the helpers several command modules share.

``commands.py`` holds the built-in table; the larger commands live in their own modules
(``settings_screen``, ``scoped_models``, ``project``), which import this one rather than
``commands.py`` so that the table can import them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

from pi_coding_agent.coding.modes.interactive import history
from pi_coding_agent.coding.modes.interactive.dialogs import choose
from pi_coding_agent.coding.modes.interactive.picker import Picker

if TYPE_CHECKING:
    from pi_coding_agent.coding.agent_session import AgentSession
    from pi_coding_agent.coding.modes.interactive.blocks import Palette
    from pi_coding_agent.coding.modes.interactive.editor import Editor
    from pi_coding_agent.coding.modes.interactive.extension_ui import TuiExtensionUI
    from pi_coding_agent.coding.modes.interactive.keys import KeyMap
    from pi_coding_agent.coding.modes.interactive.transcript import Transcript


class PiApp(Protocol):
    """What the commands use of the app (``app.PiApp``), which imports the command modules."""

    session: AgentSession
    transcript: Transcript
    editor: Editor
    keymap: KeyMap
    ui: TuiExtensionUI

    def show_notice(self, message: str, kind: str | None = None) -> None: ...

    def refresh_footer(self) -> None: ...

    def warn_if_untrusted(self) -> None: ...

    def set_editor_text(self, text: str) -> None: ...

    def restore_queue(self) -> None: ...

    def copy_to_clipboard(self, text: str) -> None: ...

    def exit(self, result: int | None = None, return_code: int = 0, message: Any = None) -> None: ...

    def lend_terminal(self) -> AbstractContextManager[None]: ...

    def spawn(self, work: Any) -> None: ...

    def use_palette(self, palette: Palette) -> None: ...


Handler = Callable[[PiApp, str], Awaitable[None]]


async def pick(app: PiApp, title: str, options: list[tuple[str, str]]) -> str | None:
    return await choose(app, Picker(title, options))


async def replaced(app: PiApp, result: dict[str, Any] | None = None) -> None:
    """Redraw everything after the session was replaced or moved in its tree."""
    if result is not None and result.get("cancelled"):
        app.show_notice("Cancelled", "warning")
        return
    await app.transcript.restore(history.items(app.session))
    app.warn_if_untrusted()  # as pi, under the transcript of the session it now shows
    app.refresh_footer()
