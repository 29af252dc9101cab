"""Modal dialogs (confirm, one-line input, multi-line editor, the base of full-screen lists), and
``choose`` for a ``picker`` in place of the editor; ``extension_ui.TuiExtensionUI`` shows extensions'
dialogs with them.

Each dialog is a Textual ``ModalScreen`` that dismisses with its answer; ``ask`` pushes one and
awaits the answer from any task on the app's loop, with an optional timeout and abort signal that
dismiss it with the default answer, as RPC mode's dialogs do.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, OptionList, TextArea

from pi_coding_agent.coding.modes.interactive.picker import Picker, one_line_paste

if TYPE_CHECKING:
    from pi_coding_agent.ai.abort import AbortSignal

T = TypeVar("T")

DIALOG_CSS = """
{name} {{ align: center middle; }}
{name} > Vertical {{ width: 90%; max-width: 110; height: auto; max-height: 80%; border: round $accent;
                     background: $surface; padding: 0 1; }}
{name} Label {{ width: 100%; }}
{name} OptionList {{ height: auto; max-height: 20; }}
"""


class SearchList(ModalScreen[T]):
    """A screen of a search field over a list: Up/Down move the list while the field has the focus,
    and Enter (in the field or on the list) acts on the highlighted row (``act``)."""

    async def _on_resize(self, event: events.Resize) -> None:
        """The Resize a screen gets from its own first layout lays it and the screens under it out
        again at the same size: skipped (a real resize comes at a new size, and goes through)."""
        if event.size == self._size:
            event.prevent_default()

    def on_key(self, event: Any) -> None:
        if event.key in ("up", "down"):
            list_ = self.query_one(OptionList)
            (list_.action_cursor_up if event.key == "up" else list_.action_cursor_down)()
            event.stop()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.act(self.query_one(OptionList).highlighted)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.act(event.option_index)

    def act(self, index: int | None) -> None:
        """What Enter does with row ``index`` of the list (None: no row is highlighted)."""
        raise NotImplementedError


class PickerScreen(ModalScreen[str | None]):
    """The picker over a full-screen dialog, where the editor it replaces is not to be seen."""

    DEFAULT_CSS = DIALOG_CSS.format(name="PickerScreen") + "PickerScreen Picker { border: none; padding: 0; }"

    def __init__(self, picker: Picker) -> None:
        super().__init__()
        self.picker = picker
        picker.on_answer = self.dismiss

    def compose(self) -> ComposeResult:
        with Vertical():
            yield self.picker


class ConfirmScreen(ModalScreen[bool]):
    DEFAULT_CSS = DIALOG_CSS.format(name="ConfirmScreen")
    BINDINGS: ClassVar[list[Any]] = [("y,enter", "answer(True)", "Yes"), ("n,escape", "answer(False)", "No")]

    def __init__(self, title: str, message: str) -> None:
        super().__init__()
        self.title_text, self.message = title, message

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Text(self.title_text))
            yield Label(Text(self.message))
            yield Label(Text("[y/Enter] yes   [n/Esc] no"))

    def action_answer(self, value: bool) -> None:
        self.dismiss(value)


class _LineInput(Input):
    """Textual's input keeps only a paste's first line; pi's keeps all of it, its line ends removed
    and a tab as four spaces."""

    def _on_paste(self, event: events.Paste) -> None:
        event.prevent_default()  # not Input's handler too
        event.text = one_line_paste(event.text)
        super()._on_paste(event)


class InputScreen(ModalScreen[str | None]):
    DEFAULT_CSS = DIALOG_CSS.format(name="InputScreen")
    BINDINGS: ClassVar[list[Any]] = [("escape", "cancel", "Cancel")]

    def __init__(self, title: str, placeholder: str | None = None, value: str = "") -> None:
        super().__init__()
        self.title_text, self.placeholder, self.value = title, placeholder or "", value

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Text(self.title_text))
            yield _LineInput(value=self.value, placeholder=self.placeholder)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)


class EditorScreen(ModalScreen[str | None]):
    """Multi-line text: Ctrl+S keeps it, Escape cancels."""

    DEFAULT_CSS = DIALOG_CSS.format(name="EditorScreen") + "EditorScreen TextArea { height: 16; }"
    BINDINGS: ClassVar[list[Any]] = [("ctrl+s", "save", "Save"), ("escape", "cancel", "Cancel")]

    def __init__(self, title: str, prefill: str | None = None) -> None:
        super().__init__()
        self.title_text, self.prefill = title, prefill or ""

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Text(f"{self.title_text}   (Ctrl+S save, Esc cancel)"))
            yield TextArea(self.prefill)

    def action_save(self) -> None:
        self.dismiss(self.query_one(TextArea).text)

    def action_cancel(self) -> None:
        self.dismiss(None)


def preload_css(app: Any) -> None:
    """Parse the picker's CSS while the app idles after start-up; the first picker opened would
    otherwise parse it, and restyle the whole screen for it."""
    for node in (Picker("", []), PickerScreen(Picker("", []))):
        node._post_register(app)
    app.stylesheet.parse()


async def ask(app: Any, screen: ModalScreen[T], default: T, timeout_ms: int | None = None,
              signal: AbortSignal | None = None) -> T:
    """Show ``screen`` on ``app`` (a Textual ``App``) and wait for its answer; a timeout or an abort
    answers ``default``."""

    def close() -> None:
        if screen.is_attached and app.screen is screen:
            screen.dismiss(None)

    return await _answer(lambda answered: app.push_screen(screen, callback=answered), close, default,
                         timeout_ms, signal)


async def choose(app: Any, picker: Picker, timeout_ms: int | None = None, signal: AbortSignal | None = None) -> str | None:
    """Show ``picker`` on ``app`` (``app.PiApp``: in place of its editor; over a full-screen dialog:
    in a modal) and wait for the chosen id; Escape, a timeout or an abort answer None."""
    if len(app.screen_stack) > 1:
        return await ask(app, PickerScreen(picker), None, timeout_ms, signal)

    def show(answered: Callable[[str | None], None]) -> None:
        picker.on_answer = answered
        app.open_picker(picker)

    return await _answer(show, lambda: app.close_picker(picker), None, timeout_ms, signal)


async def _answer(show: Callable[[Callable[[T | None], None]], object], close: Callable[[], None], default: T,
                  timeout_ms: int | None, signal: AbortSignal | None) -> T:
    """``show`` a dialog, handing it the callback its answer goes to, and wait for that answer (None:
    ``default``); a timeout or an abort answers ``default``; ``close`` takes the dialog away after."""
    if signal is not None and signal.aborted:
        return default
    future: asyncio.Future[T] = asyncio.get_running_loop().create_future()

    def answered(value: T | None) -> None:
        if not future.done():
            future.set_result(default if value is None and default is not None else value)  # type: ignore[arg-type]

    remove = signal.on_abort(lambda: answered(None)) if signal is not None else None
    show(answered)
    try:
        if timeout_ms:
            return await asyncio.wait_for(asyncio.shield(future), timeout_ms / 1000)
        return await future
    except TimeoutError:
        return default
    finally:
        if remove is not None:
            remove()
        close()

