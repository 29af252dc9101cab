"""``pi config``: a terminal list of the installed packages' resources, each with a checkbox. Space
(or Enter) toggles the highlighted resource and writes the change to the settings file at once
(``coding/packages/resource_config.py``); Tab switches between the user and the project settings
(the project only when trusted); Escape closes.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from pi_coding_agent.coding.packages.resource_config import ResourceItem, package_items, settings_path, toggle

_TITLES = {"user": "Global Resources", "project": "Project Resources"}
_KINDS = {"extensions": "Extensions", "skills": "Skills", "prompts": "Prompts", "themes": "Themes"}


class ResourceConfigApp(App[int]):
    """The picker; ``run`` returns 0."""

    CSS = "#title { padding: 0 1; text-style: bold; } #where { padding: 0 1; color: $text-muted; }"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("space", "toggle_resource", "toggle"), Binding("tab", "switch", "switch mode", priority=True),
        Binding("escape", "close", "close")]

    def __init__(self, agent_dir: Path, cwd: Path, scope: str, project_allowed: bool) -> None:
        super().__init__()
        self.agent_dir, self.cwd, self.scope = agent_dir, cwd, scope
        self.project_allowed = project_allowed
        self.items: list[ResourceItem] = []

    def compose(self) -> ComposeResult:
        yield Label(id="title")
        yield Label(id="where", markup=False)
        yield OptionList(id="resources")

    def on_mount(self) -> None:
        self.refresh_items()

    def refresh_items(self, keep: int | None = None) -> None:
        """List the scope's resources again (after a toggle, the file is the truth)."""
        self.items = package_items(self.scope, self.agent_dir, self.cwd)
        self.query_one("#title", Label).update(Text(f"{_TITLES[self.scope]}   tab switch mode · space toggle · esc close"))
        path = settings_path(self.scope, self.agent_dir, self.cwd)
        self.query_one("#where", Label).update(str(path) if self.items else f"{path}: no package resources")
        listing = self.query_one("#resources", OptionList)
        listing.clear_options()
        listing.add_options([Option(Text(_line(item)), id=str(i)) for i, item in enumerate(self.items)])
        if self.items:
            listing.highlighted = min(keep or 0, len(self.items) - 1)
        listing.focus()

    def action_toggle_resource(self) -> None:
        index = self.query_one("#resources", OptionList).highlighted
        if index is None or index >= len(self.items):
            return
        item = self.items[index]
        toggle(item, not item.enabled, self.scope, self.agent_dir, self.cwd)
        self.refresh_items(index)

    def on_option_list_option_selected(self, _event: OptionList.OptionSelected) -> None:
        self.action_toggle_resource()

    def action_switch(self) -> None:
        if self.project_allowed:
            self.scope = "project" if self.scope == "user" else "user"
            self.refresh_items()

    def action_close(self) -> None:
        self.exit(0)


def _line(item: ResourceItem) -> str:
    return f"{'[x]' if item.enabled else '[ ]'} {item.source}  {_KINDS[item.kind]}: {item.pattern}"
