"""Extension API members that only the terminal UI uses: ``register_shortcut`` keys and
``register_message_renderer`` drawings of ``custom`` messages.

Shortcuts follow pi 1.6.0's precedence: a key bound to one of the UI's reserved actions (abort,
quit, submit, model and thinking keys, the external editor...) stays the UI's and the shortcut is
skipped with a warning; on any other bound key the extension wins (with a warning); between two
extensions the later one wins. Both are looked up when used, so they follow a session replacement
or ``/reload`` that loads other extensions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pi_coding_agent.agent.awaitables import maybe_await
from pi_coding_agent.coding.modes.interactive.keys import normalise

if TYPE_CHECKING:
    from rich.console import RenderableType

    from pi_coding_agent.coding.extensions.registry import Extension, Shortcut
    from pi_coding_agent.coding.extensions.runner import ExtensionRunner
    from pi_coding_agent.coding.modes.interactive.command_host import PiApp
    from pi_coding_agent.coding.modes.interactive.keys import KeyMap

RESERVED_ACTIONS = ("app.interrupt", "app.clear", "app.exit", "app.suspend", "app.thinking.cycle",
                    "app.model.cycleForward", "app.model.cycleBackward", "app.model.select", "app.tools.expand",
                    "app.thinking.toggle", "app.editor.external", "app.message.copy", "app.message.followUp",
                    "tui.input.submit")
RESERVED_EDITOR_KEYS = ("ctrl+k",)  # pi's tui.editor.deleteToLineEnd, reserved too; Textual's text area binds it
PREFIX = "extension.shortcut:"


def shortcut_table(extensions: list[Extension], keymap: KeyMap) -> tuple[dict[str, tuple[Extension, Shortcut]],
                                                                          list[str]]:
    """Normalised key -> the shortcut it runs, and the warnings pi gives for conflicts."""
    owner: dict[str, str] = {}
    for action, keys in keymap.keys.items():
        for key in keys:
            if owner.get(normalise(key)) not in RESERVED_ACTIONS:  # a reserved action keeps a key it shares
                owner[normalise(key)] = action
    reserved = {key for key, action in owner.items() if action in RESERVED_ACTIONS} | set(RESERVED_EDITOR_KEYS)
    table: dict[str, tuple[Extension, Shortcut]] = {}
    warnings: list[str] = []
    for ext in extensions:
        for key, shortcut in ext.shortcuts.items():
            normal = normalise(key)
            if normal in reserved:
                warnings.append(f"Extension shortcut '{key}' from {ext.path} conflicts with built-in shortcut. Skipping.")
                continue
            if normal in owner:
                warnings.append(f"Extension shortcut conflict: '{key}' is built-in shortcut for {owner[normal]} "
                                f"and {ext.path}. Using {ext.path}.")
            if normal in table:
                warnings.append(f"Extension shortcut conflict: '{key}' registered by both {table[normal][0].path} "
                                f"and {ext.path}. Using {ext.path}.")
            table[normal] = (ext, shortcut)
    return table, warnings


def _extensions(app: PiApp) -> list[Extension]:
    runner = app.session.extensions
    return [] if runner is None else runner.extensions


def install(app: PiApp) -> None:
    """Route the editor's keys and the transcript's custom messages through the extensions, and say
    which shortcuts lost a conflict (before ``ui.attach``, which shows pending notices)."""
    app.editor.shortcut_action = lambda key: shortcut_action(app, key)
    app.transcript.render_custom = lambda message, expanded: render_custom(app, message, expanded)
    for warning in shortcut_table(_extensions(app), app.keymap)[1]:
        app.ui.notify(f"Warning: {warning}", "warning")  # shown once the restored transcript is drawn


def shortcut_action(app: PiApp, key: str) -> str | None:
    """The editor's action for ``key`` when an extension's shortcut takes it."""
    extensions = _extensions(app)
    if not any(ext.shortcuts for ext in extensions):
        return None
    normal = normalise(key)
    return PREFIX + normal if normal in shortcut_table(extensions, app.keymap)[0] else None


async def run_shortcut(app: PiApp, action: str) -> None:
    runner: ExtensionRunner | None = app.session.extensions
    found = shortcut_table(_extensions(app), app.keymap)[0].get(action.removeprefix(PREFIX))
    if runner is None or found is None:
        return
    ext, shortcut = found
    try:
        await maybe_await(shortcut.handler(runner.context))
    except Exception as exc:
        runner.report_error(ext.path, "shortcut", exc)


def shortcut_hotkeys(app: PiApp) -> list[tuple[str, str]]:
    """(key, description) of the extensions' shortcuts, for ``/hotkeys``."""
    table = shortcut_table(_extensions(app), app.keymap)[0]
    return [(shortcut.key, shortcut.description or f"Extension shortcut ({ext.source.path.name})")
            for ext, shortcut in table.values()]


def render_custom(app: PiApp, message: Mapping[str, Any], expanded: bool) -> RenderableType | None:
    """The registered renderer's drawing of a ``custom`` message; None for the default one (no renderer,
    the renderer answered None, or it raised: reported as an extension error)."""
    from rich.text import Text

    custom_type = message.get("customType")
    for ext in reversed(_extensions(app)):
        renderer = ext.message_renderers.get(str(custom_type))
        if renderer is None:
            continue
        try:
            drawn = renderer(message, {"expanded": expanded}, dict(app.transcript.palette))
        except Exception as exc:
            runner = app.session.extensions
            if runner is not None:
                runner.report_error(ext.path, "message_renderer", exc)
            return None
        return Text(drawn) if isinstance(drawn, str) else drawn
    return None
