"""Snapshots of the main screens: each is compared, colours included, with an SVG screenshot kept in
``snapshots/`` (Textual's ``export_screenshot``).

The screens are made deterministic: a fixed size, the footer's cwd and git branch and the header's
version fixed, no blinking cursor, tool durations zeroed, sessions with fixed times and cwd. After a
deliberate change of a screen, remake the files with ``PI_UPDATE_SNAPSHOTS=1`` and review them (an
SVG opens in a browser). A failure leaves the screen it got next to the test's tmp_path and prints
its text.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
from textual._text_area_theme import TextAreaTheme
from textual.widget import Widget

from pi_coding_agent.coding import paths
from pi_coding_agent.coding.modes.interactive import app as app_module
from pi_coding_agent.coding.modes.interactive import footer, theme
from pi_coding_agent.coding.modes.interactive.picker import Picker
from pi_coding_agent.coding.modes.interactive.transcript import Transcript
from tests.coding.interactive.test_interactive import app_maker, screen_text, type_text, until

SNAPSHOTS = Path(__file__).parent / "snapshots"
SIZE = (100, 32)
UPDATE = os.environ.get("PI_UPDATE_SNAPSHOTS") == "1"
TEXTUAL = version("textual")
_STAMP = re.compile(r"<!-- textual (\S+) -->\n")


def _normalised(svg: str) -> str:
    """Without the random id Rich gives each export, and with tool durations zeroed."""
    svg = re.sub(r"\bterminal-\d+-", "terminal-", svg)
    return re.sub(r"Took(&#160;|\s)\d+\.\ds", r"Took\g<1>0.0s", svg)


async def assert_snapshot(app: Any, name: str, tmp_path: Path) -> None:
    """The app's screen equals ``snapshots/<name>.svg`` (rewritten instead with PI_UPDATE_SNAPSHOTS=1)."""
    await _settled(app)
    got = _normalised(app.export_screenshot(title="pi"))
    path = SNAPSHOTS / f"{name}.svg"
    if UPDATE:
        SNAPSHOTS.mkdir(exist_ok=True)
        path.write_text(f"<!-- textual {TEXTUAL} -->\n{got}")
        return
    if not path.exists():
        pytest.fail(f"no snapshot {path.name}: make it with PI_UPDATE_SNAPSHOTS=1 and review it")
    kept = path.read_text()
    made_with = _STAMP.match(kept)
    if made_with and made_with.group(1) != TEXTUAL:
        pytest.skip(f"{path.name} was made with textual {made_with.group(1)}, this is {TEXTUAL}: "
                    "remake the snapshots with PI_UPDATE_SNAPSHOTS=1")
    if _STAMP.sub("", kept, count=1) != got:
        (tmp_path / path.name).write_text(got)
        pytest.fail(f"{name} differs from {path}; the screen got ({tmp_path / path.name}):\n{screen_text(app)}")


async def _settled(app: Any, timeout: float = 10.0) -> None:
    """Until the screen stays the same for 0.2 s (the frames after the state a test waited for)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    last = None
    while (text := screen_text(app)) != last and loop.time() < deadline:
        last = text
        await asyncio.sleep(0.2)


@pytest.fixture
async def make_app(tmp_path, fake_llm, monkeypatch):
    """An app whose footer says ``~/project (main)`` and whose header says ``pi 1.0.0``."""
    monkeypatch.setattr(footer, "home_relative", lambda path: "~/project")
    monkeypatch.setattr(footer, "git_branch", lambda cwd: "main")
    monkeypatch.setattr(app_module, "__version__", "1.0.0")
    sessions: list[Any] = []
    base = app_maker(tmp_path, fake_llm, sessions)

    async def make(**options: Any) -> Any:
        app = await base(**options)
        app.editor.cursor_blink = False  # from the first frame: a focused editor always shows its cursor
        return app

    yield make
    for session in sessions:
        await session.shutdown()


async def test_empty_start_screen(make_app, tmp_path):
    app = await make_app()
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: "m1" in screen_text(app))
        await assert_snapshot(app, "start", tmp_path)


ANSWER = """Done. The **notes** now say *hello*:

```python
def greet(name: str) -> str:
    return f"hello {name}"
```

- one edit
- one command
"""


@pytest.mark.slow
async def test_transcript_with_markdown_code_a_bash_call_and_an_edit_diff(make_app, fake_llm, tmp_path):
    (tmp_path / "notes.txt").write_text("first line\nsay hi\nlast line\n")
    fake_llm.add({"content": [{"type": "toolCall", "id": "c1", "name": "bash",
                               "arguments": {"command": "printf 'one\\ntwo\\n'"}}]},
                 {"content": [{"type": "toolCall", "id": "c2", "name": "edit", "arguments": {
                     "path": "notes.txt", "edits": [{"oldText": "say hi", "newText": "say hello"}]}}]},
                 {"content": [{"type": "text", "text": ANSWER}]})
    app = await make_app()
    async with app.run_test(size=(100, 44)) as pilot:
        await type_text(pilot, "update the notes")
        await pilot.press("enter")
        await until(pilot, lambda: "one command" in screen_text(app) and not app.session.is_streaming)
        await assert_snapshot(app, "transcript", tmp_path)


async def test_model_picker(make_app, tmp_path):
    app = await make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+l")
        await until(pilot, lambda: "Select model" in screen_text(app) and "local/m2" in screen_text(app))
        await assert_snapshot(app, "model-picker", tmp_path)


def write_session(directory: Path, index: int, first: str) -> None:
    """A two-message session of ``/work/project`` at a fixed time (later for a higher ``index``)."""
    stamp = f"2026-01-{index + 1:02d}T10:00:00.000Z"
    ms = 1_767_261_600_000 + index * 86_400_000
    records = [{"type": "session", "version": 3, "id": f"s{index}", "timestamp": stamp, "cwd": "/work/project"},
               {"type": "message", "id": f"u{index}", "parentId": None, "timestamp": stamp,
                "message": {"role": "user", "content": [{"type": "text", "text": first}], "timestamp": ms}},
               {"type": "message", "id": f"a{index}", "parentId": f"u{index}", "timestamp": stamp,
                "message": {"role": "assistant", "content": [{"type": "text", "text": "ok"}], "timestamp": ms,
                            "api": "openai-completions", "provider": "local", "model": "m1", "stopReason": "stop",
                            "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
                                      "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0,
                                               "total": 0}}}}]
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"2026-01-{index + 1:02d}T10-00-00-000Z_s{index}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    os.utime(path, (ms / 1000, ms / 1000))


@pytest.mark.slow
async def test_session_picker(make_app, tmp_path):
    directory = paths.default_session_dir(tmp_path / "agent", tmp_path)
    for index, first in enumerate(("fix the parser", "write the docs", "speed up streaming")):
        write_session(directory, index, first)
    app = await make_app(no_session=False)
    async with app.run_test(size=SIZE) as pilot:
        await type_text(pilot, "/resume")
        await pilot.press("enter")
        await until(pilot, lambda: "Resume session" in screen_text(app) and "fix the parser" in screen_text(app))
        await assert_snapshot(app, "session-picker", tmp_path)


@pytest.mark.slow
async def test_the_session_picker_opens_before_reading_every_session(make_app, tmp_path, monkeypatch):
    from pi_coding_agent.coding.modes.interactive import commands
    from pi_coding_agent.coding.session import listing

    directory = paths.default_session_dir(tmp_path / "agent", tmp_path)
    count = commands.RESUME_PAGE * 2 + 5
    for index in range(count):
        write_session(directory, index, f"task {index:03d}")
    reads: list[int] = []
    original = listing.session_info
    monkeypatch.setattr(listing, "session_info", lambda path: reads.append(1) or original(path))
    app = await make_app(no_session=False)
    async with app.run_test(size=SIZE) as pilot:
        opened_after: list[int] = []
        open_picker = app.open_picker
        monkeypatch.setattr(app, "open_picker", lambda picker: opened_after.append(len(reads)) or open_picker(picker))
        await type_text(pilot, "/resume")
        await pilot.press("enter")
        await until(pilot, lambda: "task 084" in screen_text(app))  # the newest, first
        assert opened_after == [commands.RESUME_FIRST_PAGE]
        await until(pilot, lambda: len(app.query_one(Picker).options) == count)
        await type_text(pilot, "task 000")  # the oldest, from the last page, found by the search
        await until(pilot, lambda: "task 000" in screen_text(app) and "task 084" not in screen_text(app))


async def test_extension_dialog(make_app, tmp_path):
    app = await make_app()
    async with app.run_test(size=SIZE) as pilot:
        answer = asyncio.ensure_future(app.ui.select("Deploy where?", ["staging", "production"]))
        await until(pilot, lambda: "Deploy where?" in screen_text(app))
        await assert_snapshot(app, "extension-select", tmp_path)
        await pilot.press("enter")
        assert await answer == "staging"


# ----------------------------------------------------------------------------- the streaming path


def _delta(text: str) -> dict[str, Any]:
    return {"type": "message_update", "assistantMessageEvent": {"type": "text_delta", "contentIndex": 0, "delta": text}}


def _record_refreshes(monkeypatch: Any, widget: type = Transcript) -> list[tuple[bool, int]]:
    """(layout asked for, lines repainted) of each refresh of a ``widget`` from now on."""
    calls: list[tuple[bool, int]] = []
    original = widget.refresh

    def refresh(self: Any, *regions: Any, layout: bool = False, **options: Any) -> Any:
        if self.is_attached:  # not a widget built off screen (the app's warm-up builds the pickers' ones)
            calls.append((layout, sum(region.height for region in regions) if regions else self.size.height))
        return original(self, *regions, layout=layout, **options)

    monkeypatch.setattr(widget, "refresh", refresh)
    return calls


async def test_a_streamed_answer_that_grows_redraws_without_a_screen_layout(make_app, monkeypatch):
    """A layout of the screen redraws every widget on it: new lines of an answer only extend the
    transcript's scroll range, and the view follows the bottom."""
    app = await make_app()
    async with app.run_test(size=SIZE) as pilot:
        transcript = app.transcript
        transcript.handle({"type": "message_start", "message": {"role": "assistant", "content": []}})
        transcript.handle(_delta("\n\n".join(f"Paragraph {i}" for i in range(20))))
        await until(pilot, lambda: "Paragraph 19" in screen_text(app) and transcript.show_vertical_scrollbar)
        refreshes = _record_refreshes(monkeypatch, Widget)
        for i in range(20, 25):
            transcript.handle(_delta(f"\n\nParagraph {i}"))
            await until(pilot, lambda i=i: f"Paragraph {i}" in screen_text(app))
        assert refreshes and not any(layout for layout, _ in refreshes)


async def test_a_streamed_line_that_keeps_its_height_repaints_only_that_line(make_app, monkeypatch):
    app = await make_app()
    async with app.run_test(size=SIZE) as pilot:
        transcript = app.transcript
        transcript.handle({"type": "message_start", "message": {"role": "assistant", "content": []}})
        transcript.handle(_delta("First paragraph\n\nSecond words"))
        await until(pilot, lambda: "Second words" in screen_text(app))
        refreshes = _record_refreshes(monkeypatch)
        transcript.handle(_delta(" and more on the same line"))
        await until(pilot, lambda: "Second words and more on the same line" in screen_text(app))
        assert refreshes == [(False, 1)]


async def test_a_typed_key_holds_the_transcript_redraw_for_a_moment(make_app, monkeypatch):
    """The key's frame goes first; the held answer is drawn right after."""
    app = await make_app()
    async with app.run_test(size=SIZE) as pilot:
        transcript = app.transcript
        holds: list[bool] = []
        original = transcript.hold
        monkeypatch.setattr(transcript, "hold", lambda: holds.append(True) or original())
        await pilot.press("x")
        assert holds
        transcript.handle({"type": "message_start", "message": {"role": "assistant", "content": []}})
        transcript.handle(_delta("Held text"))
        transcript.hold()
        transcript.flush()
        assert transcript._dirty, "the key's hold kept the transcript from redrawing"
        await until(pilot, lambda: "Held text" in screen_text(app))


async def test_a_typed_key_asks_only_the_editor_for_its_lines(make_app, monkeypatch):
    """Textual's compositor asked every widget for all its lines to paint a key's three editor rows."""
    app = await make_app()
    async with app.run_test(size=SIZE) as pilot:
        app.transcript.handle({"type": "message_start", "message": {"role": "assistant", "content": []}})
        app.transcript.handle(_delta("\n\n".join(f"Paragraph {i}" for i in range(40))))
        await until(pilot, lambda: "Paragraph 39" in screen_text(app))
        await _settled(app)
        asked: list[str] = []
        for widget in (app.editor, app.transcript, *app.lines.values(), app.query_one("#header")):
            original = widget.render_lines
            monkeypatch.setattr(widget, "render_lines",
                                lambda crop, w=widget, render=original: asked.append(w.id or "") or render(crop))
        await pilot.press("x")
        await until(pilot, lambda: "editor" in asked)
        assert set(asked) == {"editor"}
        assert "x" in screen_text(app)


async def test_the_editor_fills_its_theme_from_the_css_once_per_change(make_app, monkeypatch):
    """``TextArea`` re-reads six component styles on each render; the editor only when the CSS changed."""
    app = await make_app()
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: "m1" in screen_text(app))
        filled: list[Any] = []
        original = TextAreaTheme.apply_css
        monkeypatch.setattr(TextAreaTheme, "apply_css", lambda theme, area: filled.append(area) or original(theme, area))
        await type_text(pilot, "abc")
        await until(pilot, lambda: "abc" in screen_text(app))
        assert not filled
        app.use_palette(theme.load_palette("light", [], []))
        await until(pilot, lambda: filled and app.editor._theme.base_style.bgcolor.triplet.hex == "#ffffff")


async def test_a_key_typed_just_after_a_frame_is_painted_without_waiting_for_the_next_tick(make_app, monkeypatch):
    """After each frame Textual's update timer sleeps a whole period before looking at the screen again;
    the main screen paints a repaint as soon as its messages are handled instead."""
    app = await make_app()
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: "m1" in screen_text(app))
        await _settled(app)  # start-up's last frames (and the warm-up's) behind
        screen = app.screen
        waited: list[bool] = []  # the timer resumed with the editor's repaint pending
        original = screen._update_timer.resume
        monkeypatch.setattr(screen._update_timer, "resume",
                            lambda: waited.append(app.editor in screen._dirty_widgets) or original())
        await type_text(pilot, "ab")
        await until(pilot, lambda: "ab" in screen_text(app))
        assert not any(waited)


async def test_a_typed_character_is_painted_by_the_key_handler(make_app, monkeypatch):
    """Not after the editor's refresh went through its own and the screen's message queues."""
    app = await make_app()
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: "m1" in screen_text(app))
        await _settled(app)  # start-up's last frames (and the warm-up's) behind
        updated: list[Any] = []
        original = type(app.screen)._on_update
        monkeypatch.setattr(type(app.screen), "_on_update",
                            lambda screen, message: updated.append(message.widget) or original(screen, message))
        await type_text(pilot, "ab")
        await until(pilot, lambda: "ab" in screen_text(app))
        assert app.editor not in updated
