"""pi's question "Trust project folder?": at start-up, before the session or app exists (``pi
config``, and interactive ``pi`` through ``create_session``'s ``ask_trust``: ``ask_trust``), and inside the running
app when a session replacement enters another folder (``ask_trust_in_app``). The five answers of pi
1.6.0, the chosen one saved in ``trust.json`` (the "this session only" ones save nothing); Escape or
Ctrl+C answers "not trusted" and saves nothing.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Label, Static

from pi_coding_agent.coding.resources.trust import TrustChoice, save_trust_decisions, trust_choices

if TYPE_CHECKING:
    from pi_coding_agent.coding.modes.interactive.extension_ui import TuiExtensionUI

EXPLANATION = ("This allows pi to load .pi settings and resources, install missing project packages, "
               "and execute project extensions.")
UNTRUSTED_WARNING = ("This project is not trusted. Project .pi resources and packages are ignored. "
                     "Use /trust to save a trust decision, then restart pi.")


class TrustPromptApp(App[bool]):
    """Asks once; ``run`` returns whether the project is trusted for this run. The answer under the
    cursor is marked ``→``, as pi marks it."""

    CSS = "Label { padding: 0 1; } #why { padding: 1 1; } #choices { padding: 0 1 1 1; }"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "move(-1)", show=False, priority=True), Binding("down", "move(1)", show=False, priority=True),
        Binding("enter", "choose", show=False, priority=True),
        Binding("escape,ctrl+c", "cancel", show=False, priority=True)]

    def __init__(self, agent_dir: Path, cwd: Path) -> None:
        super().__init__()
        self.agent_dir, self.cwd = agent_dir, cwd
        self.choices = trust_choices(cwd, session_only=True)
        self.selected = 0

    def compose(self) -> ComposeResult:
        yield Label(Text("Trust project folder?", style="bold"))
        yield Label(str(self.cwd.resolve()), markup=False)
        yield Label(EXPLANATION, id="why", markup=False)
        yield Static(self._choices_text(), id="choices")
        yield Label("↑↓ navigate  enter select  escape/ctrl+c cancel", markup=False)

    def _choices_text(self) -> Text:
        text = Text()
        for index, (label, *_) in enumerate(self.choices):
            mine = index == self.selected
            text.append(("→ " if mine else "  ") + label + "\n", style="bold" if mine else "")
        return text

    def action_move(self, step: int) -> None:
        self.selected = (self.selected + step) % len(self.choices)
        self.query_one("#choices", Static).update(self._choices_text())

    def action_choose(self) -> None:
        self.exit(apply_choice(self.agent_dir, self.choices[self.selected]))

    def action_cancel(self) -> None:
        self.exit(False)


def apply_choice(agent_dir: Path, choice: TrustChoice) -> bool:
    """Save what ``choice`` saves (nothing for the "this session only" ones); whether it trusts."""
    _, trusted, updates, _ = choice
    if updates:
        save_trust_decisions(agent_dir, updates)
    return trusted


async def ask_trust(agent_dir: Path, cwd: Path) -> bool:
    """The question in the terminal, before any app (a ``TrustAsker``); whether the project is trusted."""
    return bool(await TrustPromptApp(agent_dir, cwd).run_async())


async def ask_trust_in_app(ui: TuiExtensionUI, agent_dir: Path, cwd: Path) -> bool:
    """The question as a dialog of the running app (pi asks it with its selector there, title first,
    then the folder and what trusting allows); Escape answers "not trusted" and saves nothing."""
    choices = trust_choices(cwd, session_only=True)
    label = await ui.select(f"Trust project folder?\n{cwd.resolve()}\n\n{EXPLANATION}", [c[0] for c in choices])
    chosen = next((choice for choice in choices if choice[0] == label), None)
    return False if chosen is None else apply_choice(agent_dir, chosen)


@contextlib.contextmanager
def trust_asked_in_app(app: Any, asking: bool = True) -> Iterator[None]:
    """While inside, a replacement entering a folder pi would ask about asks ``app``'s user
    (``SessionRuntime.ask_trust``); ``asking`` False leaves the usual rules alone, as pi's ``/import``."""
    rt = app.session.rt
    if asking:
        rt.ask_trust = functools.partial(ask_trust_in_app, app.ui)
    try:
        yield
    finally:
        rt.ask_trust = None
