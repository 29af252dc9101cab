"""``/settings``: the settings of pi's settings screen that this front end and its session use.

Enter or Space moves a setting to its next value, as pi's list does, and the change is written at
once to ``<agent-dir>/settings.json`` (``Settings.set_global``: an atomic replace of the re-read
file). The session's own setters are used where the running session holds the value (queue modes,
auto-compaction), so a change applies now; a new theme redraws the screen in its colours.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Input, Label, OptionList
from textual.widgets.option_list import Option

from pi_coding_agent.coding.modes.interactive.dialogs import DIALOG_CSS, SearchList, ask, choose
from pi_coding_agent.coding.modes.interactive.picker import Picker

if TYPE_CHECKING:

    from pi_coding_agent.coding.modes.interactive.command_host import PiApp

BOOL = (True, False)
QUEUE = ("one-at-a-time", "all")


@dataclass(frozen=True)
class Setting:
    label: str
    key: str  # dotted, as in settings.json
    values: tuple[Any, ...]  # in the order Enter cycles through them
    default: Any
    description: str
    names: tuple[str, ...] = ()  # how the values are shown, when not as themselves

    def shown(self, value: Any) -> str:
        if isinstance(value, dict):  # modelThinkingLevels, as pi sums it up
            return f"{len(value)} configured" if value else "none"
        if self.names and value in self.values:
            return self.names[self.values.index(value)]
        return str(value).lower() if isinstance(value, bool) else str(value)

    def following(self, value: Any) -> Any:
        index = self.values.index(value) if value in self.values else -1
        return self.values[(index + 1) % len(self.values)]


SETTINGS = (
    Setting("Auto-compact", "compaction.enabled", BOOL, True, "Compact the context automatically when it gets too large"),
    Setting("Auto-resize images", "images.autoResize", BOOL, True, "Resize images to at most 2000x2000 before sending them"),
    Setting("Block images", "images.blockImages", BOOL, False, "Never send images to the model"),
    Setting("Skill commands", "enableSkillCommands", BOOL, True, "Register skills as /skill:name commands (next start)"),
    Setting("Steering mode", "steeringMode", QUEUE, "one-at-a-time",
            "Enter while the agent works queues a steering message: deliver them one at a time, or all at once"),
    Setting("Follow-up mode", "followUpMode", QUEUE, "one-at-a-time",
            "Alt+Enter queues a follow-up until the agent stops: deliver them one at a time, or all at once"),
    Setting("Transport", "transport", ("sse", "websocket", "websocket-cached", "auto"), "auto",
            "Preferred transport for providers that offer several"),
    Setting("HTTP idle timeout", "httpIdleTimeoutMs", (30_000, 60_000, 120_000, 300_000, 0), 300_000,
            "Longest silence while waiting for a provider's headers or next chunk",
            ("30 sec", "1 min", "2 min", "5 min", "disabled")),
    Setting("Cache warming", "cacheWarming", ("off", "streaming", "idle"), "idle",
            "Keep prompt caches warm: never, while the agent runs, or also between runs"),
    Setting("Hide thinking", "hideThinkingBlock", BOOL, False, "Collapse thinking blocks in the transcript"),
    Setting("Install telemetry", "enableInstallTelemetry", BOOL, True, "Send an anonymous ping after an update"),
    Setting("Default project trust", "defaultProjectTrust", ("ask", "always", "never"), "ask",
            "What to do when no extension or saved decision settles a project's trust",
            ("Ask", "Always trust", "Never trust")),
    Setting("Double-escape action", "doubleEscapeAction", ("tree", "fork", "none"), "tree",
            "What Escape twice on an empty editor opens"),
    Setting("Default thinking level per model", "modelThinkingLevels", (), {},
            "Override the default thinking level for specific models. Shift+Tab cycles in-session."),
    Setting("Theme", "theme", (), "system", "Colour theme of the interface"),
)
CLEAR = "(clear override)"


class _Search(Input):
    """The search field; Space is left to the screen, where it changes the highlighted setting."""

    def check_consume_key(self, key: str, character: str | None) -> bool:
        return key != "space" and super().check_consume_key(key, character)


class SettingsScreen(SearchList[None]):
    """The settings list with a search field; Escape closes it (every change is already saved)."""

    DEFAULT_CSS = DIALOG_CSS.format(name="SettingsScreen")
    BINDINGS: ClassVar[list[Any]] = [("escape", "dismiss(None)", "Close"),
                                     Binding("space", "change", "Change", priority=True)]

    def __init__(self, app: PiApp) -> None:
        super().__init__()
        self.pi = app
        self.rows: list[Setting] = list(SETTINGS)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("Settings")
            yield _Search(placeholder="type to search", id="search")
            yield OptionList(id="choices")
            yield Label("", id="description")
            yield Label("Type to search · Enter/Space to change · Esc to close")

    def on_mount(self) -> None:
        self._fill("")
        self.query_one(Input).focus()

    def _value(self, setting: Setting) -> Any:
        return self.pi.session.rt.settings.get(setting.key, setting.default)

    def _fill(self, query: str) -> None:
        words = query.lower().split()
        self.rows = [s for s in SETTINGS if all(w in f"{s.label} {s.description}".lower() for w in words)]
        width = max(len(s.label) for s in SETTINGS) + 4
        choices = self.query_one(OptionList)
        highlighted = choices.highlighted or 0
        choices.clear_options()
        choices.add_options([Option(Text(f"{s.label.ljust(width)}{s.shown(self._value(s))}"), id=s.key)
                             for s in self.rows])
        if self.rows:
            choices.highlighted = min(highlighted, len(self.rows) - 1)
        self._describe()

    def _describe(self) -> None:
        index = self.query_one(OptionList).highlighted
        text = self.rows[index].description if index is not None and index < len(self.rows) else ""
        self.query_one("#description", Label).update(text)

    def on_input_changed(self, event: Input.Changed) -> None:
        self.query_one(OptionList).highlighted = 0
        self._fill(event.value)

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        self._describe()

    def action_change(self) -> None:
        self.act(self.query_one(OptionList).highlighted)

    def act(self, index: int | None) -> None:
        """Enter or Space moves the highlighted setting on (or opens its picker)."""
        if index is not None and index < len(self.rows):
            self.pi.spawn(self._change(self.rows[index]))

    async def _change(self, setting: Setting) -> None:
        if setting.key == "theme":
            value: Any = await _pick_theme(self.pi, str(self._value(setting)))
        elif setting.key == "modelThinkingLevels":
            value = await _pick_model_level(self.pi, dict(self._value(setting) or {}))
        else:
            value = setting.following(self._value(setting))
        if value is None:
            return
        apply_setting(self.pi, setting.key, value)
        self._fill(self.query_one(Input).value)


async def _pick_theme(app: PiApp, current: str) -> str | None:
    from pi_coding_agent.coding.modes.interactive.theme import session_theme_files, theme_names

    names = theme_names(session_theme_files(app.session.rt))
    return await choose(app, Picker("Theme", [(n, ("✓ " if n == current else "  ") + n) for n in names]))


async def _pick_model_level(app: PiApp, levels: dict[str, str]) -> dict[str, str] | None:
    """pi's two steps: a model (the current one first), then its level or "clear override"; the
    resulting ``modelThinkingLevels`` (None when cancelled)."""
    from pi_coding_agent.ai.thinking import supported_thinking_levels

    current = app.session.agent.model
    models = sorted(app.session.get_available_models(),
                    key=lambda m: (m["provider"], m["id"]) != (current["provider"], current["id"]))
    options = [(f"{m['provider']}/{m['id']}", f"{m['id']} [{m['provider']}]"
                + (f"  {levels[k]}" if (k := f"{m['provider']}/{m['id']}") in levels else "")) for m in models]
    key = await choose(app, Picker("Per-Model Thinking Level: select a model to configure", options))
    model = next((m for m in models if f"{m['provider']}/{m['id']}" == key), None)
    if key is None or model is None:
        return None
    choices = supported_thinking_levels(model) if model.get("reasoning") else ["off"]
    rows = [(level, ("✓ " if levels.get(key) == level else "  ") + level) for level in choices]
    if key in levels:
        rows.append((CLEAR, f"  {CLEAR}"))
    level = await choose(app, Picker(f"Thinking level for {model['id']} [{model['provider']}]", rows,
                                     searchable=False))
    if level is None:
        return None
    if level == CLEAR:
        return {k: v for k, v in levels.items() if k != key}
    return {**levels, key: level}


def apply_setting(app: PiApp, key: str, value: Any) -> None:
    """Save ``key`` and apply it to the running session and UI where they hold it."""
    session = app.session
    if key == "compaction.enabled":
        session.set_auto_compaction(bool(value))
    elif key == "steeringMode":
        session.set_steering_mode(str(value))
    elif key == "followUpMode":
        session.set_follow_up_mode(str(value))
    elif value == {}:  # the last per-model level cleared: the key goes, as pi omits unset values
        session.rt.settings.remove_global(key)
    else:
        session.rt.settings.set_global(key, value)
    if key == "hideThinkingBlock":
        app.transcript.set_hide_thinking(bool(value))
    if key == "theme":
        from pi_coding_agent.coding.modes.interactive.theme import load_palette, session_theme_files

        app.use_palette(load_palette(str(value), session_theme_files(session.rt), []))
    app.refresh_footer()


async def open_settings(app: PiApp, arg: str) -> None:
    await ask(app, SettingsScreen(app), None)
