"""``/scoped-models``: which models Ctrl+P cycles through, as pi 1.6.0's model configuration screen.

Changes apply to the running session at once (its scope, ``rt.scoped``); Ctrl+S also saves them as
``enabledModels`` (``provider/id`` entries, in cycling order) in ``<agent-dir>/settings.json``, and
removes the key when every model is enabled, as pi does. Enabled models are listed first, in cycling
order, which Alt+Up/Alt+Down change; enabling every model goes back to the catalogue's order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Input, Label, OptionList
from textual.widgets.option_list import Option

from pi_coding_agent.coding.modes.interactive.completion import fuzzy_score
from pi_coding_agent.coding.modes.interactive.dialogs import DIALOG_CSS, SearchList, ask
from pi_coding_agent.coding.modes.interactive.keys import normalise

if TYPE_CHECKING:

    from pi_coding_agent.ai.types import Model
    from pi_coding_agent.coding.modes.interactive.command_host import PiApp


def model_key(model: Model) -> str:
    return f"{model['provider']}/{model['id']}"


# pi's selector actions (keys from ``keys.SELECTOR_KEYS`` and keybindings.json) -> this screen's actions
ACTIONS = {"app.models.enableAll": "all", "app.models.clearAll": "clear", "app.models.toggleProvider": "provider",
           "app.models.reorderUp": "move(-1)", "app.models.reorderDown": "move(1)", "app.models.save": "save"}


class ScopedModelsScreen(SearchList[None]):
    """Enter toggles the highlighted model; Ctrl+A enables all, Ctrl+X clears, Ctrl+P toggles the
    highlighted model's provider, Alt+Up/Alt+Down move an enabled model in the cycle, Ctrl+S saves,
    Escape closes."""

    DEFAULT_CSS = DIALOG_CSS.format(name="ScopedModelsScreen")
    BINDINGS: ClassVar[list[Any]] = [("escape", "dismiss(None)", "Close")]

    def __init__(self, app: PiApp) -> None:
        super().__init__()
        for action, keys in app.keymap.selector_keys.items():
            for key in keys:  # priority: ahead of the search field's own keys
                self._bindings.bind(normalise(key), ACTIONS[action], priority=True)
        self.pi = app
        self.models = app.session.get_available_models()
        scoped = [model_key(m) for m in app.session.rt.scoped_models]
        self.enabled: list[str] = scoped or [model_key(m) for m in self.models]
        self.saved = list(self.enabled)
        self.rows: list[str] = []

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("Model Configuration\nSession-only. Ctrl+S to save to settings.")
            yield Input(placeholder="type to search", id="search")
            yield OptionList(id="choices")
            yield Label("", id="hint")

    def on_mount(self) -> None:
        self._fill()
        self.query_one(Input).focus()

    def _fill(self) -> None:
        query = self.query_one(Input).value
        by_key = {model_key(m): m for m in self.models}
        ordered = [k for k in self.enabled if k in by_key] + [k for k in by_key if k not in self.enabled]
        self.rows = [k for k in ordered if not query or fuzzy_score(query, k) is not None]
        choices = self.query_one(OptionList)
        highlighted = choices.highlighted or 0
        choices.clear_options()
        choices.add_options([Option(Text(f"{'✓' if k in self.enabled else ' '} {by_key[k]['id']} "
                                         f"[{by_key[k]['provider']}]"), id=k) for k in self.rows])
        if self.rows:
            choices.highlighted = min(highlighted, len(self.rows) - 1)
        count = "all enabled" if len(self.enabled) == len(self.models) else f"{len(self.enabled)}/{len(self.models)} enabled"
        unsaved = "" if self.enabled == self.saved else " (unsaved)"
        self.query_one("#hint", Label).update(
            f"Enter toggle · Ctrl+A all · Ctrl+X clear · Ctrl+P provider · Alt+Up/Alt+Down reorder · "
            f"Ctrl+S save · {count}{unsaved}")

    def on_input_changed(self, event: Input.Changed) -> None:
        self.query_one(OptionList).highlighted = 0
        self._fill()

    def act(self, index: int | None) -> None:
        """Enter toggles the highlighted model."""
        if index is None or index >= len(self.rows):
            return
        key = self.rows[index]
        self.enabled = [k for k in self.enabled if k != key] if key in self.enabled else [*self.enabled, key]
        self._apply()

    def _highlighted(self) -> str | None:
        index = self.query_one(OptionList).highlighted
        return self.rows[index] if index is not None and index < len(self.rows) else None

    def action_move(self, step: int) -> None:
        """Alt+Up/Alt+Down: the highlighted enabled model one place earlier/later in the cycle (and the
        list), the cursor with it; nothing when every model is enabled, as in pi (no order is kept then)."""
        key = self._highlighted()
        if key is None or key not in self.enabled or len(self.enabled) == len(self.models):
            return
        index = self.enabled.index(key)
        if not 0 <= index + step < len(self.enabled):
            return
        self.enabled[index], self.enabled[index + step] = self.enabled[index + step], key
        self._apply()
        self.query_one(OptionList).highlighted = self.rows.index(key)

    def action_provider(self) -> None:
        """Ctrl+P: the highlighted model's provider all off when all its models are on, else all on."""
        key = self._highlighted()
        if key is None:
            return
        provider = key.split("/", 1)[0]
        keys = [model_key(m) for m in self.models if m["provider"] == provider]
        if all(k in self.enabled for k in keys):
            self.enabled = [k for k in self.enabled if k not in keys]
        else:
            self.enabled += [k for k in keys if k not in self.enabled]
        self._apply()

    def action_all(self) -> None:
        """Ctrl+A: every model, or under a search every model it lists, as in pi."""
        self.enabled += [k for k in self._listed() if k not in self.enabled]
        self._apply()

    def action_clear(self) -> None:
        """Ctrl+X: no model, or under a search none of those it lists."""
        listed = self._listed()
        self.enabled = [k for k in self.enabled if k not in listed]
        self._apply()

    def _listed(self) -> list[str]:
        return list(self.rows) if self.query_one(Input).value else [model_key(m) for m in self.models]

    def action_save(self) -> None:
        settings = self.pi.session.rt.settings
        if self.enabled and len(self.enabled) < len(self.models):
            settings.set_global("enabledModels", list(self.enabled))
        else:
            settings.remove_global("enabledModels")
        self.saved = list(self.enabled)
        self._fill()
        self.pi.show_notice("Model selection saved to settings")

    def _apply(self) -> None:
        """The session's scope follows at once: every model (or none) enabled means no scope."""
        rt = self.pi.session.rt
        levels = {model_key(m): level for m, level in rt.scoped}
        by_key = {model_key(m): m for m in self.models}
        if len(self.enabled) == len(self.models):
            self.enabled = list(by_key)  # as in pi: with no scope, the catalogue's order
        everything = not self.enabled or len(self.enabled) == len(self.models)
        rt.scoped = [] if everything else [(by_key[k], levels.get(k)) for k in self.enabled if k in by_key]
        rt.scoped_models = [m for m, _ in rt.scoped]
        self._fill()


async def open_scoped_models(app: PiApp, arg: str) -> None:
    await ask(app, ScopedModelsScreen(app), None)
