"""``ctx.ui``: what extension dialogs and notices need from a front end, and the UI of a headless one.

The protocol lives beside the extension runner (its only user) so a mode supplies a UI without the
extensions importing the mode: RPC mode passes ``modes.ui_bridge.RpcExtensionUI``; print, JSON and
SDK sessions default to ``NoUI``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from pi_coding_agent.ai.types import JsonObject

if TYPE_CHECKING:
    from pi_coding_agent.ai.abort import AbortSignal


class ExtensionUI(Protocol):
    """Dialogs (awaited, answered by the user or by their default) and fire-and-forget notices."""

    has_ui: bool

    async def select(self, title: str, options: list[str], timeout_ms: int | None = None,
                     signal: AbortSignal | None = None) -> str | None: ...

    async def confirm(self, title: str, message: str, timeout_ms: int | None = None,
                      signal: AbortSignal | None = None) -> bool: ...

    async def input(self, title: str, placeholder: str | None = None, timeout_ms: int | None = None,
                    signal: AbortSignal | None = None) -> str | None: ...

    async def editor(self, title: str, prefill: str | None = None) -> str | None: ...

    def notify(self, message: str, notify_type: str | None = None) -> None: ...

    def set_status(self, key: str, text: str | None = None) -> None: ...

    def set_widget(self, key: str, lines: list[str] | None = None, placement: str | None = None) -> None: ...

    def set_title(self, title: str) -> None: ...

    def set_editor_text(self, text: str) -> None: ...

    def paste_to_editor(self, text: str) -> None: ...

    def get_editor_text(self) -> str: ...

    def get_all_themes(self) -> list[JsonObject]: ...

    def get_theme(self, name: str) -> JsonObject | None: ...

    def set_theme(self, theme: object) -> JsonObject: ...


RPC_THEME_ERROR = "Theme switching not supported in RPC mode"  # pi's refusal there, word for word


class HeadlessThemes:
    """``ctx.ui``'s theme calls where nothing is drawn, answered as pi 1.6.0 answers them outside its
    terminal UI: no theme is listed or found (themes from ``--theme``, settings or an extension's
    ``resources_discover`` included), and switching is refused with ``theme_error``."""

    theme_error = "UI not available"

    def get_all_themes(self) -> list[JsonObject]:
        return []

    def get_theme(self, name: str) -> JsonObject | None:
        return None

    def set_theme(self, theme: object) -> JsonObject:
        """``theme`` is a name or a theme object, as in pi; neither can be shown here."""
        return {"success": False, "error": self.theme_error}


class NoUI(HeadlessThemes):
    """ctx.ui for print, JSON and SDK sessions: nobody can answer, so dialogs resolve to their defaults."""

    has_ui = False

    async def select(self, title: str, options: list[str], timeout_ms: int | None = None,
                     signal: AbortSignal | None = None) -> str | None:
        return None

    async def confirm(self, title: str, message: str, timeout_ms: int | None = None,
                      signal: AbortSignal | None = None) -> bool:
        return False

    async def input(self, title: str, placeholder: str | None = None, timeout_ms: int | None = None,
                    signal: AbortSignal | None = None) -> str | None:
        return None

    async def editor(self, title: str, prefill: str | None = None) -> str | None:
        return None

    def notify(self, message: str, notify_type: str | None = None) -> None:
        """Dropped: print and JSON modes keep stdout for their own output."""

    def set_status(self, key: str, text: str | None = None) -> None:
        """No status bar without a UI."""

    def set_widget(self, key: str, lines: list[str] | None = None, placement: str | None = None) -> None:
        """No widgets without a UI."""

    def set_title(self, title: str) -> None:
        """No title without a UI."""

    def set_editor_text(self, text: str) -> None:
        """No editor without a UI."""

    def paste_to_editor(self, text: str) -> None:
        """No editor without a UI."""

    def get_editor_text(self) -> str:
        return ""
