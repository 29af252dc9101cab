"""What the interactive mode asks before its first message: ``pi -r``'s picker, and pi's question about
a start-up session (``--session``) whose recorded folder is gone, each answer as in pi 1.6.0."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pi_coding_agent.coding.modes.interactive import build_app, open_session
from pi_coding_agent.coding.modes.interactive.extension_ui import TuiExtensionUI
from pi_coding_agent.coding.options import CliArgs
from tests.coding.interactive.test_interactive import SIZE, screen_text, type_text, until, write_models
from tests.coding.interactive.test_interactive_commands import dialog_text, flat_text, session_file

SESSION_ID = "44444444-2222-3333-4444-555555555555"


@pytest.fixture
async def start(tmp_path, fake_llm):
    """``start(**cli_options)``: (app, missing) as ``pi`` builds them at start-up in ``tmp_path``."""
    sessions: list[Any] = []
    write_models(tmp_path / "agent", fake_llm.url)

    async def make(**options: Any) -> tuple[Any, Any]:
        args = CliArgs(provider="local", model="m1", **options)
        ui = TuiExtensionUI()
        session, missing = await open_session(args, ui, cwd=tmp_path, agent_dir=tmp_path / "agent")
        sessions.append(session)
        return build_app(session, ui, args, missing=missing), missing

    yield make
    for session in sessions:
        await session.shutdown()


def gone_session(folder: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A saved session (in ``folder``) whose folder no longer exists; the file and that folder."""
    gone = tmp_path / "renamed-away"
    folder.mkdir(parents=True, exist_ok=True)
    return session_file(folder / "gone.jsonl", SESSION_ID, gone, "gone question", "gone answer"), gone


async def ask_and_answer(app: Any, gone: Path, keys: tuple[str, ...]) -> Any:
    """Open ``app``, wait for the question about ``gone`` and press ``keys``; the pilot's app after."""
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: f"Session cwd does not exist: {gone}" in dialog_text(app))
        await pilot.press(*keys)
        await until(pilot, lambda: app._exit or "gone answer" in screen_text(app))
        await pilot.pause()
    return app


async def test_a_start_up_session_whose_folder_is_gone_is_asked_about_in_the_app(start, tmp_path):
    stored, gone = gone_session(tmp_path / "elsewhere", tmp_path)
    original = stored.read_text()
    here = tmp_path.resolve()

    app, missing = await start(session=str(stored))
    assert missing is not None and app.session.sm.session_file != stored  # a new session meanwhile
    await ask_and_answer(app, gone, ("escape",))  # Cancel ends pi, as in pi: status 0, nothing written
    assert app.return_code == 0 and app.session.sm.session_id != SESSION_ID
    app, _ = await start(session=str(stored))
    await ask_and_answer(app, gone, ("down", "down", "enter"))
    assert app.return_code == 0 and app.session.sm.session_id != SESSION_ID

    app, _ = await start(session=str(stored))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: f"Continue in {here} (asks again next time)" in dialog_text(app))
        await pilot.press("enter")
        await until(pilot, lambda: "gone answer" in screen_text(app))
        assert not app._exit and app.session.sm.session_id == SESSION_ID and app.session.rt.cwd == here
    assert stored.read_text().splitlines()[0] == original.splitlines()[0]  # the folder is not stored: asked again

    app, _ = await start(session=str(stored))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: f"Fork into {here} (new session ID, original kept)" in dialog_text(app))
        await pilot.press("down", "enter")
        await until(pilot, lambda: "Forked into new session" in flat_text(app))
        fork = app.session.sm
        assert fork.session_id != SESSION_ID and "gone answer" in screen_text(app)
        assert fork.session_file.parent == fork.session_dir != stored.parent  # this folder's session folder
        assert json.loads(fork.session_file.read_text().splitlines()[0])["cwd"] == str(here)


async def test_cancelling_the_start_up_picker_or_question_of_r_ends_pi(start, tmp_path, capsys):
    app, _ = await start()
    _, gone = gone_session(app.session.sm.session_dir, tmp_path)
    app, _ = await start(resume=True)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: "Resume session" in screen_text(app) and "gone question" in screen_text(app))
        await pilot.press("escape")
        await until(pilot, lambda: app._exit)
    assert app.return_code == 0 and "No session selected" in "".join(capsys.readouterr())
    app, _ = await start(resume=True)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: "gone question" in screen_text(app))
        await pilot.press("enter")
        await until(pilot, lambda: f"Session cwd does not exist: {gone}" in dialog_text(app))
        await pilot.press("escape")
        await until(pilot, lambda: app._exit)
    assert app.return_code == 0 and app.session.sm.session_id != SESSION_ID


async def test_start_up_work_waits_for_the_first_frame(start):
    """``when_ready`` (the garbage collector's resumption at start-up) runs once the editor is drawn."""
    app, _ = await start()
    seen: list[str] = []
    app.when_ready.append(lambda: seen.append(screen_text(app)))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: bool(seen))
    assert "escape interrupt" in seen[0] and len(seen) == 1


async def test_the_completion_menu_joins_the_screen_with_the_first_completion(start):
    """Not part of the first frame (its CSS and layout were a part of every start); typing ``/`` mounts
    and opens it."""
    app, _ = await start()
    seen: list[bool] = []
    app.when_ready.append(lambda: seen.append(app.menu.parent is None))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: bool(seen))
        await type_text(pilot, "/ses")
        await until(pilot, lambda: "/session" in screen_text(app))
        assert seen == [True] and app.menu.parent is app.screen


FIRST_FRAME_MODULES = """
import asyncio, json, sys
from pathlib import Path
from pi_coding_agent.coding.modes.interactive import build_app, open_session
from pi_coding_agent.coding.modes.interactive.extension_ui import TuiExtensionUI
from pi_coding_agent.coding.options import CliArgs

async def main(home):
    args = CliArgs(provider="local", model="m1")
    ui = TuiExtensionUI()
    session, _ = await open_session(args, ui, cwd=home, agent_dir=home / "agent")
    app = build_app(session, ui, args)
    loaded = []
    app.when_ready.append(lambda: loaded.append(sorted(sys.modules)))
    async with app.run_test(size=(100, 30)) as pilot:
        while not loaded:
            await pilot.pause(0.05)
        app._warm_up()
        loaded.append(sorted(sys.modules))
    await session.shutdown()
    print(json.dumps(loaded))

asyncio.run(main(Path(sys.argv[1])))
"""


def test_commands_and_dialogs_load_after_the_first_frame(tmp_path, fake_llm):
    """The slash commands and the dialogs (with the Textual widgets only they use) are not on the way
    to the first frame; the idle warm-up after it loads them, so the first command does not wait."""
    write_models(tmp_path / "agent", fake_llm.url)
    done = subprocess.run([sys.executable, "-c", FIRST_FRAME_MODULES, str(tmp_path)], capture_output=True,
                          text=True, timeout=120, check=True, cwd=tmp_path)
    at_first_frame, after_warm_up = json.loads(done.stdout.strip().splitlines()[-1])
    later = {f"pi_coding_agent.coding.modes.interactive.{name}" for name in ("commands", "dialogs", "project")}
    assert not later & set(at_first_frame)
    assert later <= set(after_warm_up)
