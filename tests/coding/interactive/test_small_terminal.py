"""A terminal too small for the whole screen (40x10 and less), with a picker open and resized bigger
and smaller: the rows typed in and the footer stay on screen, the header above is what goes (as in a
terminal's scrollback), and the footer's rows are fitted to the width as pi fits them."""

from __future__ import annotations

import shlex
import time
from pathlib import Path
from typing import Any

import pytest

from pi_coding_agent.coding.modes.interactive.footer import fit_footer
from pi_coding_agent.coding.paths import default_session_dir
from tests.coding.interactive.test_interactive import make_app, screen_text, until  # noqa: F401
from tests.coding.interactive.test_interactive_commands import flat_text, run_command, session_file
from tests.coding.interactive.test_interactive_tmux import Tmux
from tests.support.cli_sides import FAKE_MODEL, fake_agent_env, needs_reference, pi_command


def _sessions(app: Any, cwd: Path) -> None:
    folder = app.session.sm.session_dir
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(4):
        session_file(folder / f"s{i}.jsonl", f"5555555{i}-2222-3333-4444-555555555555", cwd, f"question {i}", f"answer {i}")


@pytest.mark.slow
async def test_the_resume_picker_stays_usable_in_a_small_terminal_resized(make_app, tmp_path):  # noqa: F811
    app = await make_app(no_session=False)
    _sessions(app, tmp_path)
    async with app.run_test(size=(40, 10)) as pilot:
        await run_command(pilot, "/resume")
        await until(pilot, lambda: "question 3" in screen_text(app))
        screen = screen_text(app)
        assert "question 0" in screen and "0.0%/100k (auto)" in screen  # the list and the footer, not the header
        for size in [(120, 40), (30, 8), (20, 5), (80, 16), (40, 10)]:
            await pilot.resize_terminal(*size)
            await pilot.pause()
        await until(pilot, lambda: "question 3" in screen_text(app) and "0.0%/100k" in screen_text(app))
        await pilot.press("down", "enter")
        await until(pilot, lambda: "Resumed session" in flat_text(app))
        assert app.session.sm.session_file.name == "s2.jsonl"
        await pilot.resize_terminal(120, 40)
        await until(pilot, lambda: screen_text(app).startswith(" pi "))  # the header again, once there is room


async def test_the_footer_fits_a_narrow_terminal(make_app, tmp_path):  # noqa: F811
    app = await make_app()
    async with app.run_test(size=(30, 10)) as pilot:
        await pilot.pause()
        location, usage = screen_text(app).splitlines()[-2:]
        assert usage == " 0.0%/100k (auto)          m1 "  # the model's row was wrapped off the footer
        assert len(location) == 30 and location.endswith("... ")


@pytest.mark.parametrize(("width", "usage_row"), [
    (40, "0.0%/100k (auto)    claude-sonnet • high"),
    (20, "0.0%/100k (auto)  cl"),  # the model cut short
    (18, "0.0%/100k (auto)"),  # two cells or more between: no room for it
    (10, "0.0%/10..."),
])
def test_the_footer_rows_are_cut_as_pi_cuts_them(width: int, usage_row: str) -> None:
    location, usage = fit_footer("/a/rather/long/working/directory/name", "0.0%/100k (auto)", "claude-sonnet • high",
                                 width).split("\n")
    assert usage == usage_row
    assert (len(location), location[-3:]) == ((width, "...") if width < 37 else (37, "ame"))


WORDS = ("alpha", "bravo", "charlie", "delta")


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["ours", pytest.param("reference", marks=needs_reference)])
def test_the_resume_picker_survives_resizes_of_a_real_terminal(kind: str, tmp_path: Path) -> None:
    """Ours and pi 1.6.0 in tmux: /resume open at 40x10, the window made smaller and bigger, then the
    search typed and Enter: the session chosen opens. (At 40x10 pi's picker shows its search line
    but not its list; ours shows the list.)"""
    env = fake_agent_env(tmp_path / "home", "http://127.0.0.1:9")  # no request is made
    work = tmp_path / "work"
    work.mkdir()
    folder = default_session_dir(Path(env["PI_CODING_AGENT_DIR"]), work.resolve())
    folder.mkdir(parents=True)
    for i, word in enumerate(WORDS):
        session_file(folder / f"s{i}.jsonl", f"6666666{i}-2222-3333-4444-555555555555", work.resolve(),
                     f"question {word}", f"answer {word}")
    command, env = pi_command(kind, FAKE_MODEL, env)
    env = {k: v for k, v in env.items() if k not in ("COLUMNS", "LINES")} | {"TERM": "xterm-256color"}
    pane = Tmux(f"{shlex.join(command)}; echo EXITED $?; sleep 60", work, env)
    try:
        pane.wait_for(lambda s: "escape interrupt" in s)
        pane.keys("/resume")
        pane.wait_for(lambda s: "/resume" in s)
        pane.keys("Enter")
        pane.wait_for(lambda s: "question delta" in s)
        for width, height in [(40, 10), (20, 5), (12, 3), (100, 30), (40, 10)]:
            pane.resize(width, height)
            time.sleep(0.5)  # each its own redraw
        pane.keys("bravo")
        pane.wait_for(lambda s: "bravo" in s and "question delta" not in s)
        pane.keys("Enter")
        pane.wait_for(lambda s: "Resumed session" in s)
        pane.resize(120, 40)
        screen = pane.wait_for(lambda s: "answer bravo" in s)
        assert "EXITED" not in screen
    finally:
        pane.kill()
