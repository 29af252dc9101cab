"""``pi config``: every resource pi would load (``coding/packages/resource_config.py``) in groups, each
with a checkbox, and a search line on top, as pi 1.6.0's picker. Typing filters (name, type or path);
Up/Down/PageUp/PageDown move between resources; Space or Enter toggles the highlighted one and writes
the settings file at once (``coding/packages/resource_overrides.py``); Tab switches between the user
view and the project view (only for a trusted project), where Space cycles inherit/+/-; Escape or
Ctrl+C closes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.widgets import Input, Label, Static

from pi_coding_agent.coding.packages.resource_config import (
    KIND_LABELS,
    Group,
    ResourceItem,
    build_groups,
    resolve_items,
)
from pi_coding_agent.coding.packages.resource_overrides import (
    LOAD,
    UNLOAD,
    ProjectOverrides,
    item_key,
    toggle_user,
)

_CHROME = 8  # lines around the list, as pi counts them for its visible window


@dataclass(frozen=True)
class Row:
    """One line of the list: a group header, a type header (``kind``) or a resource (``item``)."""

    group: Group
    kind: str | None = None
    item: ResourceItem | None = None


class SearchInput(Input):
    """The search line; Space is the toggle key, never typed (pi's picker behaves the same)."""

    def check_consume_key(self, key: str, character: str | None) -> bool:
        return key != "space" and super().check_consume_key(key, character)


class ResourceConfigApp(App[int]):
    """The picker; ``run`` returns 0. ``scope`` is the view it opens in: "user" or "project"."""

    CSS = ("#title { padding: 0 1; } #where { padding: 0 1; color: $text-muted; }"
           "#searchline { height: 1; padding: 0 1; } #search { border: none; height: 1; padding: 0; width: 1fr; }"
           " #resources { padding: 1 0 0 0; }")
    ENABLE_COMMAND_PALETTE = False
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "move(-1)", show=False, priority=True), Binding("down", "move(1)", show=False, priority=True),
        Binding("pageup", "page(-1)", show=False, priority=True),
        Binding("pagedown", "page(1)", show=False, priority=True),
        Binding("space,enter", "toggle_resource", "toggle", priority=True),
        Binding("tab", "switch", "switch mode", priority=True),
        Binding("escape,ctrl+c", "close", "close", priority=True)]

    def __init__(self, agent_dir: Path, cwd: Path, scope: str, project_allowed: bool,
                 builtins: Sequence[str] = ()) -> None:
        super().__init__()
        self.agent_dir, self.cwd, self.project_allowed = agent_dir, cwd, project_allowed
        self.scope = scope if project_allowed else "user"
        user_items = resolve_items(agent_dir, cwd, False, builtins)
        self.groups = {"user": build_groups(user_items, agent_dir),
                       "project": build_groups(resolve_items(agent_dir, cwd, project_allowed, builtins), agent_dir)}
        self.overrides = ProjectOverrides(agent_dir, cwd, {item_key(i): i.enabled for i in user_items})
        self.rows: list[Row] = []
        self.selected = 0

    def compose(self) -> ComposeResult:
        yield Label(id="title")
        yield Label(id="where", markup=False)
        with Horizontal(id="searchline"):
            yield Label("> ")
            yield SearchInput(id="search")
        yield Static(id="resources")

    def on_mount(self) -> None:
        self.filter_rows("")
        self.query_one("#search", Input).focus()

    # ------------------------------------------------------------------ state

    def filter_rows(self, query: str) -> None:
        """The rows whose resources match ``query`` (all when blank), with their headers; the first
        resource selected."""
        rows: list[Row] = []
        for group in self.groups[self.scope]:
            kinds = {kind: [i for i in items if not query.strip() or i.matches(query)]
                     for kind, items in group.kinds.items()}
            if not any(kinds.values()):
                continue
            rows.append(Row(group))
            for kind, items in kinds.items():
                rows += [Row(group, kind)] + [Row(group, kind, item) for item in items] if items else []
        self.rows = rows
        self.selected = next((i for i, r in enumerate(rows) if r.item is not None), 0)
        self.render_view()

    def on_input_changed(self, event: Input.Changed) -> None:
        self.filter_rows(event.value)

    def action_move(self, step: int) -> None:
        index = self.selected + step
        while 0 <= index < len(self.rows):
            if self.rows[index].item is not None:
                self.selected = index
                break
            index += step
        self.render_view()

    def action_page(self, step: int) -> None:
        """Jump a screenful, then to the nearest resource in the direction back."""
        target = max(0, min(len(self.rows) - 1, self.selected + step * self._visible()))
        while 0 <= target < len(self.rows) and self.rows[target].item is None:
            target -= step
        if 0 <= target < len(self.rows):
            self.selected = target
        self.render_view()

    def action_toggle_resource(self) -> None:
        item = self.rows[self.selected].item if self.rows else None
        if item is None or (self.scope == "user" and item.scope != "user"):
            return
        if self.scope == "project":
            enabled = self.overrides.cycle(item)
        else:
            enabled = toggle_user(item, self.agent_dir, self.cwd)
        if enabled is not None:
            item.enabled = enabled
        self.render_view()

    def action_switch(self) -> None:
        if self.project_allowed:
            self.scope = "project" if self.scope == "user" else "user"
            self.filter_rows(self.query_one("#search", Input).value)

    def action_close(self) -> None:
        self.exit(0)

    # ------------------------------------------------------------------ drawing

    def render_view(self) -> None:
        project = self.scope == "project"
        hint = ("tab switch mode · " if self.project_allowed else "") + \
            ("space cycle inherit/+/-" if project else "space toggle") + " · esc close"
        title = Text("Project Local Resources" if project else "Global Resources", style="bold")
        self.query_one("#title", Label).update(title + Text("   " + hint, style="dim"))
        self.query_one("#where", Label).update(".pi/settings.json · inherited global resources are dimmed"
                                               if project else "~/.pi/agent/settings.json")
        self.query_one("#resources", Static).update(self.list_text())

    def list_text(self) -> Text:
        """The visible window of rows (the selection kept in the middle) and pi's ``(n/total)``."""
        if not self.rows:
            return Text("  No resources found", style="dim")
        visible = self._visible()
        start = max(0, min(self.selected - visible // 2, len(self.rows) - visible))
        end = min(start + visible, len(self.rows))
        lines = [self._line(i, self.rows[i]) for i in range(start, end)]
        if start > 0 or end < len(self.rows):
            items = [i for i, r in enumerate(self.rows) if r.item is not None]
            position = sum(1 for i in items if i < self.selected) + 1
            lines.append(Text(f"  ({position}/{len(items)})", style="dim"))
        return Text("\n").join(lines)

    def _visible(self) -> int:
        return max(5, self.size.height - _CHROME)

    def _line(self, index: int, row: Row) -> Text:
        inherited_group = self.scope == "project" and row.group.scope == "user"
        if row.item is None and row.kind is None:
            label = row.group.label + (" · inherited global" if inherited_group else "")
            return Text("  " + label, style="bold dim" if inherited_group else "bold cyan")
        if row.item is None:
            return Text("    " + KIND_LABELS[row.kind or ""], style="dim")
        item = row.item
        box, suffix = self._checkbox(item)
        dimmed = self.scope == "project" and self.overrides.is_inherited(item) and suffix.endswith("inherited global")
        name = Text(item.display, style="dim" if dimmed else ("bold" if index == self.selected else ""))
        return Text("> " if index == self.selected else "  ") + Text("    ") + box + Text(" ") + name + \
            Text(suffix, style="dim")

    def _checkbox(self, item: ResourceItem) -> tuple[Text, str]:
        """The checkbox and the suffix: ``[+]``/``[-]`` for the project's own word in the project view."""
        if self.scope != "project":
            return Text("[x]", style="green") if item.enabled else Text("[ ]", style="dim"), ""
        state = self.overrides.state(item)
        if state == LOAD:
            return Text("[+]", style="green"), "  project load"
        if state == UNLOAD:
            return Text("[-]", style="yellow"), "  project unload"
        inherited = "  inherited global" if self.overrides.is_inherited(item) else ""
        return Text("[x]" if item.enabled else "[ ]", style="dim"), inherited

