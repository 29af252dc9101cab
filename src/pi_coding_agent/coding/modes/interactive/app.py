"""The terminal UI: header, transcript, queued messages, completion menu, editor, status and footer.

``PiApp`` is a client of one ``AgentSession``, as RPC mode is: it subscribes to the session's events
(drawn by ``Transcript``) and calls the session's methods for what the user types. Slash commands
are ``commands.py``'s; extension dialogs arrive through ``extension_ui.TuiExtensionUI``. The commands
and the dialogs (with the Textual widgets only they use) load in the idle warm-up after the first
frame, or with the first command typed before it.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import events
from textual.app import App, ComposeResult
from textual.theme import Theme
from textual.widgets import OptionList, Static

from pi_coding_agent import __version__
from pi_coding_agent.coding.errors import SessionError
from pi_coding_agent.coding.modes.interactive import completion, extension_hooks, footer, history
from pi_coding_agent.coding.modes.interactive.blocks import Palette
from pi_coding_agent.coding.modes.interactive.editor import Editor
from pi_coding_agent.coding.modes.interactive.keys import KeyMap
from pi_coding_agent.coding.modes.interactive.main_screen import MainScreen
from pi_coding_agent.coding.modes.interactive.picker import Picker
from pi_coding_agent.coding.modes.interactive.transcript import Transcript
from pi_coding_agent.coding.modes.interactive.trust_prompt import UNTRUSTED_WARNING
from pi_coding_agent.coding.resources.trust import has_trust_requiring_resources

if TYPE_CHECKING:
    from textual.driver import Driver

    from pi_coding_agent.coding.agent_session import AgentSession
    from pi_coding_agent.coding.events import AgentEvent
    from pi_coding_agent.coding.modes.interactive.extension_ui import TuiExtensionUI

DOUBLE_PRESS_S = 1.0  # a second Ctrl+C / Escape within this many seconds counts as a double press
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
# the provider stack and Rich's markdown load in the background this long after the first frame (the
# last start-up work, such as freezing what start-up made, goes first), so the first answer does not
# wait for their imports (about 200 ms of CPU, which pi pays at launch)
WARM_UP_AFTER_S = 0.25
ANSWER_MODULES = ("rich.markdown",)
FOOTER_EVENTS = ("message_end", "agent_settled", "thinking_level_changed", "session_info_changed",
                 "compaction_end", "model_changed")


class _Footer(Static):
    """The footer, laid out again when its width changes: the model name sits at the right edge."""

    def __init__(self, lay_out: Callable[[], None], id: str) -> None:
        super().__init__(id=id)
        self._lay_out = lay_out

    def on_resize(self, event: events.Resize) -> None:
        self._lay_out()


class PiApp(App[int], inherit_css=False):
    """``pi`` in a terminal. ``exit`` returns the process status.

    Textual's own ``App.DEFAULT_CSS`` is not inherited: Textual parses an app's CSS twice at start-up
    (its first stylesheet refresh parses into a fresh stylesheet), and of its rules only the colours
    apply here (the rest style ANSI-colour mode, maximized widgets, a header, disabled widgets, none of
    which this app uses): about 12 M instructions of a start."""

    DEFAULT_CSS = "PiApp { background: $background; color: $foreground; }"
    CSS = """
    Screen { layout: vertical; }
    #header { padding: 0 1; color: $text-muted; }
    #queue, #status, #widgets-above, #widgets-below { padding: 0 1; height: auto; }
    #queue { color: $text-muted; }
    #menu { height: auto; max-height: 12; display: none; border: none; }
    #footer { padding: 0 1; height: 2; color: $text-muted; }
    """
    ENABLE_COMMAND_PALETTE = False

    def __init__(self, session: AgentSession, ui: TuiExtensionUI, keymap: KeyMap, palette: Palette,
                 initial: list[str] | None = None, images: list[dict[str, Any]] | None = None,
                 opening: Callable[[PiApp], Awaitable[bool]] | None = None) -> None:
        """``opening``: a dialog before the first messages (``-r``'s picker); False ends pi."""
        super().__init__(driver_class=_driver_class())
        self.session = session
        self.ui = ui
        self.keymap = keymap
        self.palette = palette
        self.initial = list(initial or [])
        self.initial_images = images
        self.opening = opening
        self.when_ready: list[Callable[[], object]] = []  # run after the first frame
        settings = session.rt.settings
        self.transcript = Transcript(palette, settings.hide_thinking_block)
        self.menu = OptionList(id="menu")
        self.menu.display = False  # before it is mounted too (``_mount_menu``): the editor reads it
        self.editor = Editor(keymap, self.menu, self.completions)
        self.files = completion.FileIndex(session.rt.cwd, _find_rg(session))
        self.lines = {name: Static(id=name) for name in ("queue", "widgets-above", "status", "widgets-below")}
        self.lines["footer"] = _Footer(self.refresh_footer, id="footer")
        self.statuses: dict[str, str] = {}
        self.widget_lines: dict[str, tuple[list[str], str]] = {}
        self._last_press: dict[str, float] = {}
        self._branch = footer.git_branch(str(session.rt.cwd))
        self._spin = 0
        self._status_text = ""
        self._held_title: str | None = None  # not None while the terminal is lent (the last title asked for)
        self._tasks: set[asyncio.Task[Any]] = set()
        self._pickers: list[Picker] = []  # open in place of the editor, the last one shown
        self._unsubscribe: Any = None
        self._register_theme()

    # ------------------------------------------------------------------ layout

    def _register_theme(self, name: str = "pi") -> None:
        p = self.palette
        light = p.get("appearance") == "light"
        self.register_theme(Theme(
            name=name, primary=p["accent"], accent=p["accent"], foreground=p["text"], error=p["error"],
            success=p["success"], warning=p["warning"], dark=not light,
            background="#ffffff" if light else "#000000", surface=p.get("toolPendingBg", "#222222"),
            variables={"tool-pending": p["toolPendingBg"], "tool-success": p["toolSuccessBg"],
                       "tool-error": p["toolErrorBg"], "border-muted": p["borderMuted"],
                       "text-muted": p["muted"]}))
        self.theme = name

    def use_palette(self, palette: Palette) -> None:
        """Another theme at once (``/settings``): CSS colours, the header and the transcript are drawn
        again (a run in progress keeps its colours in the transcript)."""
        self.palette = self.transcript.palette = palette
        self._register_theme("pi-alt" if self.theme == "pi" else "pi")  # Textual applies a theme when its name changes
        self.query_one("#header", Static).update(self._header())
        if not self.session.is_streaming:
            self.spawn(self.transcript.restore(history.items(self.session)))

    def get_default_screen(self) -> MainScreen:
        return MainScreen()

    def compose(self) -> ComposeResult:
        yield Static(self._header(), id="header")
        yield self.transcript
        yield self.lines["queue"]
        yield self.lines["widgets-above"]
        yield self.lines["status"]
        yield self.editor
        yield self.lines["widgets-below"]
        yield self.lines["footer"]

    def _header(self) -> Text:
        keys = "escape interrupt · ctrl+c/ctrl+d clear/exit · / commands · ! bash · ctrl+o expand tools"
        return Text.assemble((f"pi {__version__}", f"bold {self.palette['accent']}"), "  ", keys)

    async def on_mount(self) -> None:
        self._unsubscribe = self.session.subscribe(self._on_session_event)
        extension_hooks.install(self)
        await self.transcript.restore(history.items(self.session))
        self.warn_if_untrusted()
        self.ui.attach(self)
        self.editor.focus()
        self.refresh_footer()
        self.set_interval(0.25, self._tick)  # each redraw of the status line costs a layout pass
        self.when_ready.append(lambda: self.set_timer(WARM_UP_AFTER_S, self._warm_up))
        self.call_after_refresh(lambda: [ready() for ready in self.when_ready])
        if self.initial or self.opening:
            self.spawn(self._send_initial())

    def _warm_up(self) -> None:
        from pi_coding_agent.coding.modes.interactive import commands, dialogs  # noqa: F401  (loaded ahead)
        from pi_coding_agent.coding.modes.warm_up import warm_up_after_first_answer

        dialogs.preload_css(self)

        model = self.session.agent.model
        has_auth = model is not None and self.session.rt.registry.has_auth(model["provider"])
        warm_up_after_first_answer(model, has_auth, ANSWER_MODULES)

    def warn_if_untrusted(self) -> None:
        """pi's warning when the project's ``.pi`` resources were left out (whatever said no: the
        question, a flag, a saved decision), under the transcript at start-up and after a replacement."""
        rt = self.session.rt
        if not rt.project_trusted and has_trust_requiring_resources(Path(rt.cwd)):
            self.show_notice(UNTRUSTED_WARNING, "warning")

    async def _send_initial(self) -> None:
        """``pi "msg"``: sent as if typed, one after another, after the opening dialog; ``@file`` images
        go with the first prompt."""
        if self.opening is not None and not await self.opening(self):
            self.exit(0)
            return
        images = self.initial_images
        for text in self.initial:
            command = text.startswith("/")
            await self.submit(text, follow_up=False, images=None if command else images)
            images = images if command else None
            await self.session.wait_for_idle()

    def on_unmount(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()

    # ------------------------------------------------------------------ session events

    def _on_session_event(self, event: AgentEvent) -> None:
        self.transcript.handle(event)
        etype = event["type"]  # one lookup per streamed delta (the local does not narrow ``event``)
        if etype == "queue_update":
            self._show_queue(event["steering"], event["followUp"])  # type: ignore[typeddict-item]
        if etype in FOOTER_EVENTS:
            self.refresh_footer()

    def _show_queue(self, steering: list[str], follow_up: list[str]) -> None:
        lines = [f"steer: {t}" for t in steering] + [f"follow-up: {t}" for t in follow_up]
        text = "\n".join(line if len(line) < 200 else line[:199] + "…" for line in lines)
        self.lines["queue"].update(text + ("\n(alt+up to edit)" if lines else ""))

    def refresh_footer(self) -> None:
        location, usage, model = footer.footer_lines(self.session, self._branch)
        self.lines["footer"].update(footer.fit_footer(location, usage, model, max(self.size.width - 2, 1)))

    def _tick(self) -> None:
        """The working indicator and the extension statuses (cheap: one short line)."""
        parts = []
        if self.session.is_streaming or self.session.is_compacting:
            self._spin = (self._spin + 1) % len(SPINNER)
            parts.append(f"{SPINNER[self._spin]} Working… (esc to interrupt)")
        parts += [text for _, text in sorted(self.statuses.items())]
        text = "  ".join(parts)
        if text != self._status_text:  # a layout pass of the whole screen only when the height may change
            same_height = bool(text) == bool(self._status_text) and max(len(text), len(self._status_text)) < self.size.width - 2
            self._status_text = text
            self.lines["status"].update(text, layout=not same_height)

    # ------------------------------------------------------------------ input

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key):
            self.transcript.hold()
        await super().on_event(event)

    def _mount_menu(self) -> None:
        """The completion menu joins the screen with the first completion asked for, not at start-up
        (its CSS and layout were a part of every start); it opens with a layout of the screen anyway.
        Not in the warm-up: a mount lays the screen out, which could fall in a streamed answer."""
        if self.menu.parent is None:
            self.mount(self.menu, before=self.editor)

    def completions(self, before_cursor: str) -> list[completion.Candidate]:
        self._mount_menu()
        if before_cursor.startswith("/") and " " not in before_cursor:
            from pi_coding_agent.coding.modes.interactive import commands

            return completion.command_candidates(before_cursor, commands.command_list(self.session))
        token = completion.at_token(before_cursor)
        if token is None:
            return []
        if self.files.files is None:
            task = self.files.ensure_loading()
            task.add_done_callback(lambda _: self.editor.refresh_menu(only_if_open_or_trigger=True))
            return []
        return completion.file_candidates(token, self.files.files)

    async def on_editor_submitted(self, message: Editor.Submitted) -> None:
        """The line runs as a task; the screen's updates, held since the Enter, wait for its first step,
        so the cleared editor and what the line opens (a picker, the prompt) share one layout and paint
        instead of two (the step holds the loop meanwhile anyway)."""
        try:
            self.spawn(self.submit(message.text, message.follow_up))
        finally:
            asyncio.get_running_loop().call_soon(message.release)

    async def submit(self, text: str, follow_up: bool, images: list[dict[str, Any]] | None = None) -> None:
        """A line from the editor: a command, a shell command, or a prompt (queued while a run streams)."""
        from pi_coding_agent.coding.modes.interactive import commands

        stripped = text.strip()
        if stripped.startswith("/") and await commands.run(self, stripped):
            return
        if stripped.startswith("!"):
            await self.run_bash(stripped)
            return
        behaviour = ("followUp" if follow_up else "steer") if self.session.is_streaming else None
        try:
            await self.session.prompt(text, images, behaviour)
        except SessionError as err:
            self.show_notice(str(err), "error")

    async def run_bash(self, line: str) -> None:
        """``!cmd`` runs and its output joins the context; ``!!cmd`` keeps it out."""
        exclude = line.startswith("!!")
        command = line[2:] if exclude else line[1:]
        if not command.strip():
            return
        view = self.transcript.add_bash(command.strip(), "", None)
        output: list[str] = []

        def on_delta(delta: str) -> None:
            output.append(delta)
            view.result = {"content": [{"type": "text", "text": "".join(output)}]}
            self.transcript.mark(view)

        try:
            result = await self.session.bash(command, exclude, on_delta)
        except Exception as err:
            self.transcript.finish_bash(view, f"{''.join(output)}\n{err}", 1)
            return
        self.transcript.finish_bash(view, str(result.get("output", "".join(output))), result.get("exitCode"))

    def spawn(self, work: Any) -> None:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            self.show_notice(f"Error: {task.exception()}", "error")

    # ------------------------------------------------------------------ application keys

    def _double(self, key: str) -> bool:
        now = time.monotonic()
        last = self._last_press.get(key, 0.0)
        self._last_press[key] = now
        return now - last < DOUBLE_PRESS_S

    def on_editor_action(self, message: Editor.Action) -> None:
        action = message.action
        if action == "app.clear":  # the editor cleared itself when it had text
            if not message.empty:
                self._last_press["ctrl+c"] = time.monotonic()
            elif self._double("ctrl+c"):
                self.exit(0)
            else:
                self.show_notice("Press ctrl+c again to exit", "dim")
        elif action == "app.exit":  # sent on an empty editor only
            self.exit(0)
        elif action == "app.interrupt":
            self._interrupt(message.empty)
        else:  # as a task: a picker waits for keys, which this handler would otherwise hold up
            from pi_coding_agent.coding.modes.interactive import commands

            self.spawn(commands.run_action(self, action))

    def _interrupt(self, editor_empty: bool) -> None:
        """Escape: abort the run (queued messages go back to the editor); twice on an idle empty editor:
        the ``doubleEscapeAction`` setting (``tree`` by default)."""
        if self.session.is_streaming or self.session.is_compacting:
            self.restore_queue()
            self.spawn(self.session.abort())
            return
        self.session.abort_bash()  # a running `!command`
        if editor_empty and self._double("escape"):
            choice = self.session.rt.settings.double_escape_action
            if choice in ("tree", "fork"):
                from pi_coding_agent.coding.modes.interactive import commands

                self.spawn(commands.run(self, f"/{choice}"))

    def restore_queue(self) -> None:
        """Queued messages back into the editor (Alt+Up, or an abort), as pi does."""
        cleared = self.session.clear_queue()
        texts = [*cleared.get("steering", []), *cleared.get("followUp", [])]
        if texts:
            current = self.editor.text
            self.editor.load_text("\n".join([*texts, current] if current else texts))

    # ------------------------------------------------------------------ pickers

    def open_picker(self, picker: Picker) -> None:
        """``picker`` in place of the editor (or of the picker it opens over), as pi shows its selectors."""
        (self._pickers[-1] if self._pickers else self.editor).display = False
        self.menu.display = False
        self._pickers.append(picker)
        self.mount(picker, before=self.editor)

    def close_picker(self, picker: Picker) -> None:
        """``picker`` gone; what it hid shows again and has the keys."""
        if picker not in self._pickers:
            return
        top = picker is self._pickers[-1]
        self._pickers.remove(picker)
        picker.remove()
        if top:
            shown: Picker | Editor = self._pickers[-1] if self._pickers else self.editor
            shown.display = True
            shown.focus()

    # ------------------------------------------------------------------ extension UI targets

    def show_notice(self, message: str, kind: str | None = None) -> None:
        role = {"error": "error", "warning": "warning", "dim": "dim"}.get(kind or "", "muted")
        self.transcript.add_notice(message, role)

    def set_status(self, key: str, text: str | None) -> None:
        if text:
            self.statuses[key] = text
        else:
            self.statuses.pop(key, None)
        self._tick()

    def set_widget(self, key: str, lines: list[str] | None, placement: str | None) -> None:
        if lines is None:
            self.widget_lines.pop(key, None)
        else:
            self.widget_lines[key] = (lines, placement or "aboveEditor")
        for where, target in (("aboveEditor", "widgets-above"), ("belowEditor", "widgets-below")):
            shown = [line for lines_, place in self.widget_lines.values() if place == where for line in lines_]
            self.lines[target].update("\n".join(shown))

    @contextmanager
    def lend_terminal(self) -> Iterator[None]:
        """The terminal to another program while the event loop runs on (``App.suspend``, which raises
        ``SuspendNotSupported`` when headless). Paints and title changes wait for the return: the
        suspended driver's writer thread is stopped, and writes to it would fill its queue and then
        block the loop."""
        self._held_title = ""
        try:
            with self.batch_update(), self.suspend():
                yield
        finally:
            title, self._held_title = self._held_title, None
            if title:
                self.set_terminal_title(title)

    def set_terminal_title(self, title: str) -> None:
        if self._held_title is not None:
            self._held_title = title
            return
        driver = self._driver
        if driver is not None:
            clean = "".join(ch for ch in title if ch.isprintable())
            driver.write(f"\x1b]0;{clean}\x07")

    def set_editor_text(self, text: str) -> None:
        self.editor.load_text(text)
        self.editor.move_cursor(self.editor.document.end)

    def paste_to_editor(self, text: str) -> None:
        self.editor.paste(text)


def _driver_class() -> type[Driver] | None:
    """Textual's terminal driver with its input and output on the loop's thread (``terminal_driver``),
    where Textual would use its ``LinuxDriver``; None (Textual's choice) elsewhere."""
    if sys.platform == "win32" or os.environ.get("TEXTUAL_DRIVER"):
        return None
    from pi_coding_agent.coding.modes.interactive.terminal_driver import LoopDriver

    return LoopDriver


def _find_rg(session: AgentSession) -> str | None:
    from pi_coding_agent.coding.tools.ripgrep import find_rg

    return find_rg(session.rt.agent_dir)
