"""Modal dialogs (pick from a searchable list, confirm, one-line input, multi-line editor) and the
``ExtensionUI`` of the terminal UI (``extension_ui.TuiExtensionUI``) shows extensions' dialogs with them.

Each dialog is a Textual ``ModalScreen`` that dismisses with its answer; ``ask`` pushes one and
awaits the answer from any task on the app's loop, with an optional timeout and abort signal that
dismiss it with the default answer, as RPC mode's dialogs do.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, cast

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.css.styles import RulesMap
from textual.geometry import Size
from textual.screen import ModalScreen
from textual.widgets import Input, Label, OptionList, TextArea
from textual.widgets.option_list import Option

from pi_coding_agent.coding.modes.interactive.completion import fuzzy_score

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


class Choices(OptionList):
    """An ``OptionList`` whose height is measured only as far as the screen: a dialog caps it far
    lower, and measuring every row of a long list (hundreds of sessions) on each layout wrapped them
    all, once per page of a list loaded page by page."""

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        padding = self.get_component_styles("option-list--option").padding.width
        rules = cast(RulesMap, self.styles)
        height = 0
        for option in self.options:
            height += self._get_visual(option).get_height(rules, width - padding)
            if height >= viewport.height:
                break
        return height


class SearchList(ModalScreen[T]):
    """A screen of a search field over a list: Up/Down move the list while the field has the focus,
    and Enter (in the field or on the list) acts on the highlighted row (``act``)."""

    searchable = True

    async def _on_resize(self, event: events.Resize) -> None:
        """The Resize a screen gets from its own first layout lays it and the screens under it out
        again at the same size: skipped (a real resize comes at a new size, and goes through)."""
        if event.size == self._size:
            event.prevent_default()

    def on_key(self, event: Any) -> None:
        if event.key in ("up", "down") and self.searchable:
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


class SelectScreen(SearchList[str | None]):
    """A list with a search field; answers the chosen option's id (None on Escape)."""

    DEFAULT_CSS = DIALOG_CSS.format(name="SelectScreen")
    BINDINGS: ClassVar[list[Any]] = [("escape", "cancel", "Cancel")]

    def __init__(self, title: str, options: list[tuple[str, str]], searchable: bool = True,
                 highlighted: int = 0, query: str = "") -> None:
        """``options``: (id, label) pairs, shown in the order given; ``highlighted``: the one first under
        the cursor; ``query``: the search it opens with."""
        super().__init__()
        self.title_text = title
        self.options = options
        self.searchable = searchable
        self.highlighted = highlighted
        self.query_text = query

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Text(self.title_text))
            if self.searchable:
                yield Input(self.query_text, placeholder="type to search", id="search")
            list_ = Choices(*self._filtered(self.query_text), id="choices")
            if list_.option_count:  # set before mount: no second layout and paint after it
                list_.highlighted = min(self.highlighted, list_.option_count - 1)
            yield list_

    def on_mount(self) -> None:
        (self.query_one(Input) if self.searchable else self.query_one(OptionList)).focus()

    def _filtered(self, query: str) -> list[Option]:
        matches = [(score, i) for i, (_, label) in enumerate(self.options)
                   if (score := (0 if not query else fuzzy_score(query, label))) is not None]
        if query:
            matches.sort()
        return [Option(Text(self.options[i][1]), id=str(i)) for _, i in matches]

    def on_input_changed(self, event: Input.Changed) -> None:
        list_ = self.query_one(OptionList)
        list_.clear_options()
        list_.add_options(self._filtered(event.value))
        if list_.option_count:
            list_.highlighted = 0

    def extend(self, options: list[tuple[str, str]]) -> None:
        """More options (a list loaded page by page), shown under the current search."""
        first = len(self.options)
        self.options += options
        found = self.query("#choices")
        if not found:
            return  # not composed yet: compose lists them all
        list_ = found.only_one(OptionList)
        query = self.query_one(Input).value if self.searchable else ""
        if not query:  # appended as they come: the list keeps its order and its highlight
            list_.add_options([Option(label, id=str(first + i)) for i, (_, label) in enumerate(options)])
            return
        highlighted = list_.highlighted
        list_.clear_options()
        list_.add_options(self._filtered(query))
        if list_.option_count:
            list_.highlighted = highlighted if highlighted is not None and highlighted < list_.option_count else 0

    def act(self, index: int | None) -> None:
        list_ = self.query_one(OptionList)
        if index is None or index >= list_.option_count:
            return
        option_id = list_.get_option_at_index(index).id
        self.dismiss(self.options[int(option_id or 0)][0])

    def action_cancel(self) -> None:
        self.dismiss(None)


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


class InputScreen(ModalScreen[str | None]):
    DEFAULT_CSS = DIALOG_CSS.format(name="InputScreen")
    BINDINGS: ClassVar[list[Any]] = [("escape", "cancel", "Cancel")]

    def __init__(self, title: str, placeholder: str | None = None, value: str = "") -> None:
        super().__init__()
        self.title_text, self.placeholder, self.value = title, placeholder or "", value

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Text(self.title_text))
            yield Input(value=self.value, placeholder=self.placeholder)

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
    """Parse the pickers' CSS (theirs and their widgets') while the app idles after start-up; the first
    picker opened would otherwise parse it, a good part of its CPU."""
    for node in (SelectScreen("", []), Input(), Choices(), Label()):
        node._post_register(app)
    app.stylesheet.parse()


async def ask(app: Any, screen: ModalScreen[T], default: T, timeout_ms: int | None = None,
              signal: AbortSignal | None = None) -> T:
    """Show ``screen`` on ``app`` (a Textual ``App``) and wait for its answer; a timeout or an abort
    answers ``default``."""
    if signal is not None and signal.aborted:
        return default
    future: asyncio.Future[T] = asyncio.get_running_loop().create_future()

    def answered(value: T | None) -> None:
        if not future.done():
            future.set_result(default if value is None and default is not None else value)  # type: ignore[arg-type]

    def dismiss() -> None:
        if not future.done():
            future.set_result(default)
        if screen.is_attached and app.screen is screen:
            screen.dismiss(None)

    remove = signal.on_abort(dismiss) if signal is not None else None
    app.push_screen(screen, callback=answered)
    try:
        if timeout_ms:
            return await asyncio.wait_for(asyncio.shield(future), timeout_ms / 1000)
        return await future
    except TimeoutError:
        dismiss()
        return default
    finally:
        if remove is not None:
            remove()
