"""Extension API members that only the terminal UI uses: ``register_shortcut`` keys,
``register_message_renderer`` drawings of ``custom`` messages, ``register_entry_renderer`` drawings
of ``custom`` entries (``append_entry``: shown only with a renderer) and ``register_tool_renderer``
drawings of tool calls.

Shortcuts follow pi 1.6.0's precedence: a key bound to one of the UI's reserved actions (abort,
quit, submit, model and thinking keys, the external editor...) stays the UI's and the shortcut is
skipped with a warning; on any other bound key the extension wins (with a warning); between two
extensions the later one wins. All are looked up when used, so they follow a session replacement
or ``/reload`` that loads other extensions. A renderer that raises (when called or when Rich draws
what it returned) or returns something Rich cannot draw leaves the default drawing in its place and
is reported once as an ``extension_error``: it never breaks the screen.

A TypeScript extension's message or entry renderer runs in the Node.js sidecar and answers later
(``TypeScriptDrawings``): its message shows the default drawing until the lines of the width it is
drawn at come back, then the entries showing it are drawn again with them.
"""

from __future__ import annotations

import asyncio
import functools
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeGuard

from pi_coding_agent.agent.awaitables import maybe_await
from pi_coding_agent.coding.modes.interactive.keys import normalise

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderableType, RenderResult

    from pi_coding_agent.coding.extensions.registry import Extension, Shortcut, ToolRenderer
    from pi_coding_agent.coding.extensions.runner import ExtensionRunner
    from pi_coding_agent.coding.extensions.typescript.host import MessageRenderer
    from pi_coding_agent.coding.modes.interactive.blocks import Palette
    from pi_coding_agent.coding.modes.interactive.command_host import PiApp
    from pi_coding_agent.coding.modes.interactive.keys import KeyMap

RESERVED_ACTIONS = ("app.interrupt", "app.clear", "app.exit", "app.suspend", "app.thinking.cycle",
                    "app.model.cycleForward", "app.model.cycleBackward", "app.model.select", "app.tools.expand",
                    "app.thinking.toggle", "app.editor.external", "app.message.copy", "app.message.followUp",
                    "tui.input.submit", "tui.input.copy", "tui.editor.deleteToLineEnd")
PREFIX = "extension.shortcut:"


def shortcut_table(extensions: list[Extension], keymap: KeyMap) -> tuple[dict[str, tuple[Extension, Shortcut]],
                                                                          list[str]]:
    """Normalised key -> the shortcut it runs, and the warnings pi gives for conflicts."""
    owner, reserved = _builtin_owners(keymap)
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


@functools.lru_cache(maxsize=4)
def _builtin_owners(keymap: KeyMap) -> tuple[dict[str, str], frozenset[str]]:
    """Normalised key -> the built-in action that has it, and the keys of reserved actions: kept per key
    map (an app's is fixed), as the editor asks ``shortcut_action`` on every key."""
    owner: dict[str, str] = {}
    for action, keys in keymap.keys.items():
        for key in keys:
            if owner.get(normalise(key)) not in RESERVED_ACTIONS:  # a reserved action keeps a key it shares
                owner[normalise(key)] = action
    return owner, frozenset(key for key, action in owner.items() if action in RESERVED_ACTIONS)


def _extensions(app: PiApp) -> list[Extension]:
    runner = app.session.extensions
    return [] if runner is None else runner.extensions


def install(app: PiApp) -> None:
    """Route the editor's keys and the transcript's custom messages through the extensions, and say
    which shortcuts lost a conflict (before ``ui.attach``, which shows pending notices)."""
    app.editor.shortcut_action = lambda key: shortcut_action(app, key)
    drawings = TypeScriptDrawings(app)
    app.transcript.render_custom = lambda item, expanded: render_custom(app, item, expanded, drawings)
    app.transcript.render_tool = ToolDrawings(app)
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


def render_custom(app: PiApp, item: Mapping[str, Any], expanded: bool,
                  drawings: TypeScriptDrawings) -> RenderableType | None:
    """The registered renderer's drawing of a ``custom`` message (``register_message_renderer``) or of
    a ``custom`` entry (``register_entry_renderer``); None for the default one: the message's notice,
    nothing for an entry (no renderer, or the renderer answered None). A message renderer that
    failed leaves the default, reported once; an entry renderer's failure is drawn in its place
    (``FailedEntry``), as pi draws it."""
    from rich.protocol import is_renderable
    from rich.text import Text

    entry = is_entry(item)
    for ext in reversed(_extensions(app)):
        renderer = (ext.entry_renderers if entry else ext.message_renderers).get(str(item.get("customType")))
        if renderer is None:
            continue
        if _is_typescript(renderer):
            return drawings.drawing(ext.path, renderer, item, expanded)
        report = drawings.reporter(ext.path, item)
        try:
            drawn = renderer(item, {"expanded": expanded}, dict(app.transcript.palette))
            if drawn is not None and not isinstance(drawn, str) and not is_renderable(drawn):
                raise TypeError(f"returned {type(drawn).__name__}, not a Rich renderable or a string")
        except Exception as exc:
            if entry:
                return FailedEntry(item, exc, app.transcript.palette)
            report(exc)
            return None
        if drawn is None:
            return None
        return Guarded(Text(drawn) if isinstance(drawn, str) else drawn, default_drawing(item, app.transcript.palette),
                       report)
    return None


def _is_typescript(renderer: object) -> TypeGuard[MessageRenderer]:
    """Whether a TypeScript extension registered ``renderer``; without loading the sidecar's host module,
    which a session with Python extensions only never loads (and without which there are none)."""
    host = sys.modules.get("pi_coding_agent.coding.extensions.typescript.host")
    return host is not None and isinstance(renderer, host.MessageRenderer)


def is_entry(item: Mapping[str, Any]) -> bool:
    """A ``custom`` session entry (``append_entry``), not a message: entries have a type, messages a role."""
    return item.get("type") == "custom"


def default_drawing(item: Mapping[str, Any], palette: Palette) -> RenderableType | None:
    """What a custom message or entry shows without a drawing of its renderer: an entry shows nothing."""
    from pi_coding_agent.coding.modes.interactive import blocks

    if is_entry(item):
        return None
    return blocks.notice(blocks.message_text(item) or str(item.get("customType", "")), "customMessageText", palette)


class FailedEntry:
    """An entry whose renderer raised, as pi shows it: the error on the custom message background,
    across the whole row (the renderer would have drawn it)."""

    full_width = True

    def __init__(self, item: Mapping[str, Any], error: BaseException, palette: Palette) -> None:
        self.text = f"[{item.get('customType')}] renderer failed: {error}"
        self.palette = palette

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from rich.padding import Padding

        from pi_coding_agent.coding.modes.interactive import blocks
        from pi_coding_agent.coding.modes.interactive.entries import PAD

        background = self.palette.get("customMessageBg")
        yield Padding(blocks.notice(self.text, "error", self.palette), (1, PAD),
                      style=f"on {background}" if background else "", expand=True)


class ToolDrawings:
    """The transcript's ``render_tool``: the latest extension's ``register_tool_renderer`` slots for a
    tool, each guarded so that a failure shows the default drawing (reported once per extension, tool
    and slot: a row is drawn again with every frame of its output)."""

    def __init__(self, app: PiApp) -> None:
        self.app = app
        self.reported: set[tuple[str, str, str]] = set()

    def __call__(self, name: str, args: dict[str, Any], result: dict[str, Any] | None, options: dict[str, bool],
                 title: RenderableType, body: RenderableType | None) -> tuple[RenderableType, RenderableType | None]:
        for ext in reversed(_extensions(self.app)):
            renderer = ext.tool_renderers.get(name)
            if renderer is not None:
                return self._slots(ext.path, renderer, name, args, result, options, title, body)
        return title, body

    def _slots(self, path: str, renderer: ToolRenderer, name: str, args: dict[str, Any],
               result: dict[str, Any] | None, options: dict[str, bool], title: RenderableType,
               body: RenderableType | None) -> tuple[RenderableType, RenderableType | None]:
        theme = dict(self.app.transcript.palette)
        render_call, render_result = renderer.render_call, renderer.render_result
        if render_call is not None:
            title = self._drawn(path, name, "call", lambda: render_call(args, theme), title) or title
        if render_result is not None and result is not None:
            body = self._drawn(path, name, "result", lambda: render_result(result, {**options, "args": args}, theme),
                               body)
        return title, body

    def _drawn(self, path: str, name: str, slot: str, draw: Callable[[], object],
               default: RenderableType | None) -> RenderableType | None:
        from rich.protocol import is_renderable
        from rich.text import Text

        def report(exc: BaseException) -> None:
            runner = self.app.session.extensions
            if runner is not None and (path, name, slot) not in self.reported:
                self.reported.add((path, name, slot))
                runner.report_error(path, f"tool_renderer ({name} {slot})", exc)

        try:
            drawn = draw()
            if drawn is not None and not isinstance(drawn, str) and not is_renderable(drawn):
                raise TypeError(f"returned {type(drawn).__name__}, not a Rich renderable or a string")
        except Exception as exc:
            report(exc)
            return default
        if drawn is None:
            return default
        return Guarded(Text(drawn) if isinstance(drawn, str) else drawn, default, report)


class Guarded:
    """An extension's renderable drawn in full before any of it is shown: when Rich fails on it, the
    default drawing instead (the failure is reported after the frame, not in the middle of it)."""

    def __init__(self, drawn: Any, default: RenderableType | None, report: Callable[[BaseException], None]) -> None:
        self.drawn, self.default, self.report = drawn, default, report

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        try:
            segments = list(console.render(self.drawn, options))
        except Exception as exc:
            asyncio.get_running_loop().call_soon(self.report, exc)
            segments = [] if self.default is None else list(console.render(self.default, options))
        yield from segments


class TypeScriptDrawings:
    """The lines TypeScript message renderers drew, by message, width and ``expanded``: asked once each
    (ahead, at the transcript's width, when the message comes), kept, and the entries showing the
    message marked when they come. A renderer that failed is reported once; it and one that returned
    nothing leave the default drawing. Another theme (a new palette) asks again."""

    def __init__(self, app: PiApp) -> None:
        self.app = app
        # (id of the message, width, expanded) -> (the message, kept so its id stays its own; the lines)
        self.lines: dict[tuple[int, int, bool], tuple[Mapping[str, Any], list[str] | None]] = {}
        self.asked: set[tuple[int, int, bool]] = set()
        self.reported: set[tuple[str, str]] = set()  # (extension, message_renderer)
        self.failed: dict[tuple[int, int, bool], FailedEntry] = {}  # the entries whose renderer raised
        self._palette: object = None  # the palette the lines were drawn with
        self._theme: dict[str, dict[str, str]] = {}

    def reporter(self, path: str, item: Mapping[str, Any]) -> Callable[[BaseException], None]:
        """Reports a failure of ``path``'s renderer of ``item``'s kind as an extension error, once: the
        item is drawn again with every width, theme and Ctrl+O."""
        kind = "entry_renderer" if is_entry(item) else "message_renderer"

        def report(exc: BaseException) -> None:
            runner = self.app.session.extensions
            if runner is not None and (path, kind) not in self.reported:
                self.reported.add((path, kind))
                runner.report_error(path, kind, exc)
        return report

    def drawing(self, path: str, renderer: MessageRenderer, message: Mapping[str, Any],
                expanded: bool) -> TypeScriptDrawing:
        from pi_coding_agent.coding.modes.interactive.entries import PAD

        palette = self.app.transcript.palette
        if palette is not self._palette:
            self._palette, self._theme = palette, _sgr_theme(palette)
            self.lines.clear()
            self.asked.clear()
            self.failed.clear()
        default = default_drawing(message, palette)
        drawing = TypeScriptDrawing(self, path, renderer, message, expanded, default)
        width = self.app.transcript.scrollable_content_region.width - (0 if drawing.full_width else 2 * PAD)
        if width > 0:
            drawing.lines(width)  # asked now: the answer often comes before the first frame
        return drawing

    async def ask(self, drawing: TypeScriptDrawing, width: int) -> None:
        key, palette = (id(drawing.message), width, drawing.expanded), self._palette
        try:
            lines = await drawing.renderer.render(dict(drawing.message), {"expanded": drawing.expanded, "outputPad": 0},
                                                  width, self._theme, {k: list(v) for k, v in self.app.keymap.keys.items()})
        except Exception as exc:
            lines = None
            if is_entry(drawing.message):
                self.failed[key] = FailedEntry(drawing.message, exc, self.app.transcript.palette)
            else:
                self.reporter(drawing.path, drawing.message)(exc)
        if palette is not self._palette:  # drawn in the colours of a theme left meanwhile
            return
        self.lines[key] = (drawing.message, lines)
        if lines is not None or key in self.failed:
            self._redraw(drawing.message)

    def _redraw(self, message: Mapping[str, Any]) -> None:
        """Mark the entries that show ``message`` (alone, or among restored messages)."""
        for entry in self.app.transcript.entries:
            shown = getattr(entry, "renderable", None)
            if (isinstance(shown, TypeScriptDrawing) and shown.message is message) or \
                    any(restored is message for restored in getattr(entry, "messages", ())):
                self.app.transcript.mark(entry)


def _sgr_theme(palette: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """The palette as SGR parameters by colour name (``fg`` and ``bg``), for the sidecar's Theme."""
    from rich.color import Color, ColorParseError

    theme: dict[str, dict[str, str]] = {"fg": {}, "bg": {}}
    for name, value in palette.items():
        try:
            colour = Color.parse(value)
        except ColorParseError:
            continue
        theme["fg"][name] = ";".join(colour.get_ansi_codes(foreground=True))
        theme["bg"][name] = ";".join(colour.get_ansi_codes(foreground=False))
    return theme


class TypeScriptDrawing:
    """A custom message or entry as its TypeScript renderer drew it at the width Rich gives, else its
    default (nothing, for an entry)."""

    def __init__(self, owner: TypeScriptDrawings, path: str, renderer: MessageRenderer, message: Mapping[str, Any],
                 expanded: bool, default: RenderableType | None) -> None:
        self.owner, self.path, self.renderer = owner, path, renderer
        self.message, self.expanded, self.default = message, expanded, default
        self.full_width = is_entry(message)  # as in pi: an entry's renderer draws the whole row, a message's inside the margins

    def lines(self, width: int) -> list[str] | None:
        """The renderer's lines at ``width``; None (asked for, if not yet) when there are none yet."""
        key = (id(self.message), width, self.expanded)
        found = self.owner.lines.get(key)
        if found is not None:
            return found[1]
        if key not in self.owner.asked:
            self.owner.asked.add(key)
            self.owner.app.spawn(self.owner.ask(self, width))
        return None

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from rich.text import Text

        lines = self.lines(options.max_width)
        if lines is None:
            shown = self.owner.failed.get((id(self.message), options.max_width, self.expanded)) or self.default
            if shown is not None:
                yield shown
            return
        drawn = Text("\n").join(Text.from_ansi(line) for line in lines)
        drawn.no_wrap, drawn.overflow = True, "crop"  # the lines are the renderer's, cut to the width already
        yield drawn
