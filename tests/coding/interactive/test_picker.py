"""The picker shown in place of the editor (``picker.Picker``, ``dialogs.choose``): its keys, its search,
a list that grows while it is open, what it hides and gives back, and what a key repaints."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from textual import events

from pi_coding_agent.ai.abort import AbortSignal
from pi_coding_agent.coding.modes.interactive.dialogs import PickerScreen, choose
from pi_coding_agent.coding.modes.interactive.picker import ROWS, Picker
from tests.coding.interactive.test_interactive import SIZE, make_app, screen_text, type_text, until  # noqa: F401

NAMES = [f"option {i:02d}" for i in range(25)]


def rows_any(app: Any) -> list[str]:
    """Every row of the screen, stripped."""
    return [line.strip() for line in screen_text(app).splitlines()]


def rows(app: Any) -> list[str]:
    """The picker's option rows on screen (the cursor's row marked ›)."""
    return [line for line in rows_any(app) if "option " in line and "(" not in line and not line.startswith(">")]


def opened(app: Any, picker: Picker, **options: Any) -> asyncio.Future[str | None]:
    return asyncio.ensure_future(choose(app, picker, **options))


async def test_keys_move_the_cursor_and_the_rows_shown_follow_it(make_app):  # noqa: F811
    app = await make_app()
    async with app.run_test(size=SIZE) as pilot:
        answer = opened(app, Picker("Pick", [(n, n) for n in NAMES]))
        await until(pilot, lambda: "(1/25)" in screen_text(app))
        assert rows(app)[0] == "› option 00" and len(rows(app)) == ROWS and not app.editor.display
        await pilot.press("down", "down")
        await until(pilot, lambda: "(3/25)" in screen_text(app) and "› option 02" in rows(app))
        await pilot.press("pagedown", "pagedown")  # 2 + 10 + 10: the rows scroll to keep the cursor shown
        await until(pilot, lambda: rows(app)[-1] == "› option 22" and rows(app)[0] == "option 13")
        await pilot.press("end")
        await until(pilot, lambda: rows(app)[-1] == "› option 24" and "(25/25)" in screen_text(app))
        await pilot.press("down", "pageup")  # the last stays the last; a page up goes 10 back
        await until(pilot, lambda: "› option 14" in rows(app))
        await pilot.press("home", "up")
        await until(pilot, lambda: rows(app)[0] == "› option 00")
        await pilot.press("enter")
        assert await answer == "option 00"
        await until(pilot, lambda: app.editor.display and app.focused is app.editor and not app.query(Picker))


async def test_typing_searches_and_backspace_widens_it_again(make_app):  # noqa: F811
    app = await make_app()
    async with app.run_test(size=SIZE) as pilot:
        answer = opened(app, Picker("Pick", [(f"id{i}", n) for i, n in enumerate(NAMES)]))
        await until(pilot, lambda: "(1/25)" in screen_text(app))
        await type_text(pilot, "17")
        await until(pilot, lambda: rows(app) == ["› option 17"] and "> 17" in screen_text(app))
        await pilot.press("x")
        await until(pilot, lambda: "No matches" in screen_text(app) and "(0/0)" in screen_text(app))
        await pilot.press("enter")  # nothing under the cursor: nothing chosen, the picker stays
        await pilot.press("backspace")
        await until(pilot, lambda: rows(app) == ["› option 17"])
        await pilot.press("enter")
        assert await answer == "id17"


async def test_a_paste_joins_the_search_on_one_line(make_app):  # noqa: F811
    """It was dropped; pi takes it into its search field without its line ends."""
    app = await make_app()
    async with app.run_test(size=SIZE) as pilot:
        answer = opened(app, Picker("Pick", [(f"id{i}", n) for i, n in enumerate(NAMES)]))
        await until(pilot, lambda: "(1/25)" in screen_text(app))
        app.query_one(Picker).post_message(events.Paste("opt\r\nion 1\x1b7\n"))
        await until(pilot, lambda: rows(app) == ["› option 17"] and "> option 17█" in screen_text(app))
        await pilot.press("enter")
        assert await answer == "id17"


async def test_escape_answers_none_and_a_list_without_search_ignores_letters(make_app):  # noqa: F811
    app = await make_app()
    async with app.run_test(size=SIZE) as pilot:
        answer = opened(app, Picker("Choose\nsecond title line", [("a", "alpha"), ("b", "beta")], searchable=False,
                                    highlighted=1))
        await until(pilot, lambda: "second title line" in screen_text(app) and "› beta" in rows_any(app))
        assert ">" not in screen_text(app).split("second title line")[1].split("alpha")[0]  # no search line
        await pilot.press("a", "escape")
        assert await answer is None
        await until(pilot, lambda: app.editor.display and app.focused is app.editor)
        again = opened(app, Picker("Choose", [("a", "alpha")]))
        await until(pilot, lambda: "› alpha" in rows_any(app))
        await pilot.press("ctrl+c")  # pi's other cancel key; the app does not take it as "clear"
        assert await again is None and not app.query(Picker)


async def test_options_added_while_open_keep_the_cursor_and_join_a_search(make_app):  # noqa: F811
    app = await make_app()
    async with app.run_test(size=SIZE) as pilot:
        picker = Picker("Pick", [(n, n) for n in NAMES[:5]])
        answer = opened(app, picker)
        await until(pilot, lambda: "(1/5)" in screen_text(app))
        await pilot.press("down")
        picker.extend([(n, n) for n in NAMES[5:15]])
        await until(pilot, lambda: "(2/15)" in screen_text(app) and len(rows(app)) == ROWS)
        await type_text(pilot, "2")
        await until(pilot, lambda: "option 02" in screen_text(app) and "option 12" in screen_text(app))
        picker.extend([(n, n) for n in NAMES[15:]])  # a later page under the search: its matches join
        await until(pilot, lambda: "option 22" in screen_text(app))
        await pilot.press("escape")
        assert await answer is None


async def test_a_picker_over_a_picker_hides_it_until_it_closes(make_app):  # noqa: F811
    app = await make_app()
    async with app.run_test(size=SIZE) as pilot:
        first = opened(app, Picker("First list", [("one", "one")]))
        await until(pilot, lambda: "First list" in screen_text(app))
        second = opened(app, Picker("Second list", [("two", "two")]))
        await until(pilot, lambda: "Second list" in screen_text(app) and "First list" not in screen_text(app))
        await pilot.press("enter")
        assert await second == "two"
        await until(pilot, lambda: "First list" in screen_text(app) and not app.editor.display)
        await pilot.press("enter")
        assert await first == "one"


async def test_a_timeout_or_an_abort_closes_it_with_none(make_app):  # noqa: F811
    app = await make_app()
    async with app.run_test(size=SIZE) as pilot:
        assert await choose(app, Picker("Slow", [("a", "a")]), timeout_ms=100) is None
        await until(pilot, lambda: app.editor.display and not app.query(Picker))
        signal = AbortSignal()
        answer = opened(app, Picker("Aborted", [("a", "a")]), signal=signal)
        await until(pilot, lambda: "Aborted" in screen_text(app))
        signal.abort()
        assert await answer is None
        await until(pilot, lambda: app.editor.display and not app.query(Picker))


async def test_a_click_on_a_row_chooses_it(make_app):  # noqa: F811
    app = await make_app()
    async with app.run_test(size=SIZE) as pilot:
        picker = Picker("Pick", [("a", "alpha"), ("b", "beta")])
        answer = opened(app, picker)
        await until(pilot, lambda: "› alpha" in rows_any(app))
        await pilot.click(picker, offset=(3, 4))  # the top border, title, search line, alpha, then beta
        assert await answer == "b"


async def test_over_a_full_screen_dialog_it_opens_in_a_modal(make_app):  # noqa: F811
    app = await make_app()
    async with app.run_test(size=SIZE) as pilot:
        await type_text(pilot, "/settings")
        await pilot.press("enter")
        await until(pilot, lambda: "Auto-compact" in screen_text(app))
        answer = opened(app, Picker("Nested", [("a", "alpha")]))
        await until(pilot, lambda: isinstance(app.screen, PickerScreen) and "› alpha" in screen_text(app))
        assert app.editor.display
        await pilot.press("enter")
        assert await answer == "a"
        await until(pilot, lambda: not isinstance(app.screen, PickerScreen) and "Auto-compact" in screen_text(app))


async def test_a_key_repaints_the_picker_without_laying_the_screen_out(make_app, monkeypatch):  # noqa: F811
    """A layout of the screen redraws every widget; moving the cursor changes only the picker's lines,
    and a search lays it out only when the number of rows changes."""
    app = await make_app()
    async with app.run_test(size=SIZE) as pilot:
        answer = opened(app, Picker("Pick", [(n, n) for n in NAMES]))
        await until(pilot, lambda: "(1/25)" in screen_text(app))
        layouts: list[bool] = []
        original = Picker.refresh

        def refresh(self: Any, *regions: Any, layout: bool = False, **options: Any) -> Any:
            layouts.append(layout)
            return original(self, *regions, layout=layout, **options)

        monkeypatch.setattr(Picker, "refresh", refresh)
        await pilot.press("down", "pagedown", "o")  # every name has an "o": the same ten rows
        await until(pilot, lambda: "> o" in screen_text(app))
        assert layouts and not any(layouts)
        await type_text(pilot, "ption 0")
        await until(pilot, lambda: len(rows(app)) == ROWS)
        await pilot.press("1")  # one row left: a smaller picker
        await until(pilot, lambda: rows(app) == ["› option 01"])
        assert layouts[-1]
        await pilot.press("escape")
        assert await answer is None


async def test_enter_on_resume_lays_the_screen_out_once(make_app, tmp_path, monkeypatch):  # noqa: F811
    """The cleared editor and the picker share one layout: the screen's updates wait for the command's
    first step, and the picker's own size takes no second pass."""
    from textual.screen import Screen

    from pi_coding_agent.coding import paths
    from tests.coding.interactive.test_snapshots import write_session

    directory = paths.default_session_dir(tmp_path / "agent", tmp_path)
    for index in range(3):
        write_session(directory, index, f"task {index}")
    app = await make_app(no_session=False)
    async with app.run_test(size=SIZE) as pilot:
        await type_text(pilot, "/resume")
        await pilot.pause(0.3)
        layouts: list[int] = []
        original = Screen._refresh_layout
        monkeypatch.setattr(Screen, "_refresh_layout", lambda self, *a, **k: layouts.append(1) or original(self, *a, **k))
        await pilot.press("enter")
        await until(pilot, lambda: "› " in screen_text(app) and "task 2" in screen_text(app))
        await pilot.pause(0.3)
        assert len(layouts) == 1


def paint(rows: list[str], frame: str) -> None:
    """Apply a frame's escape codes to ``rows`` (characters only: cursor moves and text)."""
    y = x = 0
    for token in re.split(r"(\x1b\[[0-9;?]*[A-Za-z])", frame):
        move = re.fullmatch(r"\x1b\[(\d+);(\d+)H", token)
        if move:
            y, x = int(move.group(1)) - 1, int(move.group(2)) - 1
        elif token and not token.startswith("\x1b"):
            row = rows[y].ljust(x)
            rows[y] = row[:x] + token + row[x + len(token):]
            x += len(token)


@pytest.mark.parametrize("notices", [0, 60])
async def test_opening_paints_the_rows_given_up_and_leaves_the_transcript_alone(make_app, monkeypatch, notices):  # noqa: F811
    """The transcript keeps its lines when the picker takes rows from it (a short one and one that
    scrolls): only the rows it gave up are painted, and the frames make the screen a full render shows."""
    from textual.app import App

    from pi_coding_agent.coding.modes.interactive.main_screen import MainScreen
    from pi_coding_agent.coding.modes.interactive.transcript import Transcript

    app = await make_app()
    async with app.run_test(size=SIZE) as pilot:
        for index in range(notices):
            app.show_notice(f"notice {index}")
        await until(pilot, lambda: notices == 0 or f"notice {notices - 1}" in screen_text(app))
        await pilot.pause(0.3)
        rows = screen_text(app).splitlines()
        frames: list[str] = []
        asked: list[list[int]] = []  # per frame, the transcript's lines rendered (not for ``screen_text``)
        display, render_lines = App._display, Transcript.render_lines

        def captured(self: Any, screen: Any, renderable: Any) -> None:
            display(self, screen, renderable)
            if renderable is not None and not self._batch_count:
                frames.append(renderable.render_segments(self.console))

        def refresh(self: Any) -> None:
            asked.append([])
            monkeypatch.setattr(Transcript, "render_lines", lambda self, crop: asked[-1].append(crop.height) or render_lines(self, crop))
            try:
                compositor_refresh(self)
            finally:
                monkeypatch.setattr(Transcript, "render_lines", render_lines)

        compositor_refresh = MainScreen._compositor_refresh
        monkeypatch.setattr(App, "_display", captured)
        monkeypatch.setattr(MainScreen, "_compositor_refresh", refresh)
        answer = opened(app, Picker("Pick", [(n, n) for n in NAMES]))
        await until(pilot, lambda: "(1/25)" in screen_text(app))
        await pilot.pause(0.3)
        for frame in frames:
            paint(rows, frame)
        assert [row.rstrip() for row in rows] == [row.rstrip() for row in screen_text(app).splitlines()]
        assert asked[0] == []  # the frame that opened it (a full repaint follows the mount: Textual's)
        if notices:  # a reader at the bottom stays there: the last lines above the picker, as in pi
            await until(pilot, lambda: f"notice {notices - 1}" in screen_text(app))
        await pilot.press("escape")
        assert await answer is None


async def test_the_editor_looks_focused_again_once_the_picker_closes(make_app):  # noqa: F811
    """The hidden editor is not restyled as it loses the focus; it is when it gets it back."""
    app = await make_app()
    async with app.run_test(size=SIZE) as pilot:
        focused_border = app.editor.styles.border_top
        answer = opened(app, Picker("Pick", [(n, n) for n in NAMES]))
        await until(pilot, lambda: "(1/25)" in screen_text(app))
        await pilot.press("escape")
        assert await answer is None
        await pilot.pause(0.1)
        assert app.editor.has_focus and app.editor.styles.border_top == focused_border
        app.set_focus(None)
        await pilot.pause(0.1)
        assert app.editor.styles.border_top != focused_border  # shown and unfocused: restyled at once
