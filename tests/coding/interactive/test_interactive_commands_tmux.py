"""The real ``pi`` in tmux against the fake LLM server: Ctrl+G hands the terminal to $EDITOR and takes
it back, ``/import`` opens another session file, ``/settings`` writes settings.json, a command's
notice reaches the screen without another key."""

from __future__ import annotations

import json

import pytest

from tests.coding.interactive.test_interactive_commands import editor_script, session_file
from tests.coding.interactive.test_interactive_tmux import _sane, pytestmark, terminal  # noqa: F401


@pytest.mark.slow
def test_ctrl_g_suspends_for_the_editor_and_sends_what_it_saved(terminal, fake_llm, tmp_path, monkeypatch):  # noqa: F811
    fake_llm.add({"content": [{"type": "text", "text": "answer to the edited prompt"}]})
    # the editor reads the terminal (a full-screen UI would still be drawn if pi had not let it go)
    monkeypatch.setenv("EDITOR", editor_script(tmp_path, 'printf "edited: "; read line; '
                                                         'printf "%s %s" "$(cat "$1")" "$line" > "$1"'))
    pane = terminal()
    pane.wait_for(lambda s: "escape interrupt" in s)
    pane.keys("first half")
    pane.keys("C-g")
    pane.wait_for(lambda s: "Launching external editor" in s and "edited:" in s)
    pane.keys("second half", "Enter")
    pane.wait_for(lambda s: "first half second half" in s and "escape interrupt" in s)
    pane.keys("Enter")
    pane.wait_for(lambda s: "answer to the edited prompt" in s)
    assert "first half second half" in json.dumps(fake_llm.requests[-1]["body"]["messages"])
    pane.keys("C-d")
    screen = pane.wait_for(lambda s: "EXITED" in s and "icanon" in s)
    assert "EXITED 0" in screen and _sane(screen)


def test_import_opens_another_session_file(terminal, tmp_path):  # noqa: F811
    other = tmp_path / "elsewhere"
    other.mkdir()
    source = session_file(tmp_path / "shared.jsonl", "abcdef01-2222-3333-4444-555555555555", other,
                          "question from the file", "answer from the file")
    pane = terminal()
    pane.wait_for(lambda s: "escape interrupt" in s)
    pane.keys(f"/import {source}")
    pane.wait_for(lambda s: f"/import {source}" in s)
    pane.keys("Enter")
    pane.wait_for(lambda s: "Replace current session with" in s)
    pane.keys("Enter")
    screen = pane.wait_for(lambda s: "Session imported from" in s)
    assert "answer from the file" in screen and "elsewhere" in screen
    stored = list((tmp_path / "agent" / "sessions").rglob("shared.jsonl"))
    assert len(stored) == 1 and "answer from the file" in stored[0].read_text()


@pytest.mark.slow
def test_settings_changes_are_written_to_settings_json(terminal, tmp_path):  # noqa: F811
    pane = terminal()
    pane.wait_for(lambda s: "escape interrupt" in s)
    pane.keys("/settings")
    pane.wait_for(lambda s: "/settings" in s)
    pane.keys("Enter")
    pane.wait_for(lambda s: "Auto-compact" in s and "Esc to close" in s)
    pane.keys("double")
    pane.wait_for(lambda s: "Auto-compact" not in s and "Double-escape action" in s)
    pane.keys("Space")
    pane.wait_for(lambda s: "fork" in s)
    pane.keys("Escape")
    pane.wait_for(lambda s: "Esc to close" not in s)
    assert json.loads((tmp_path / "agent" / "settings.json").read_text()) == {"doubleEscapeAction": "fork"}
    pane.keys("C-d")
    screen = pane.wait_for(lambda s: "EXITED" in s and "icanon" in s)
    assert "EXITED 0" in screen and _sane(screen)


def test_the_notice_of_resume_without_other_sessions_shows_without_another_key(terminal):  # noqa: F811
    """The Enter holds the screen's updates until the command's first step ran; the notice shown
    meanwhile waited for the next key when the screen was left idle under the hold."""
    pane = terminal()
    pane.wait_for(lambda s: "escape interrupt" in s)
    pane.keys("/resume")
    pane.wait_for(lambda s: "Resume another session" in s)  # the completion menu: the line is typed
    pane.keys("Enter")
    pane.wait_for(lambda s: "No other sessions in this project" in s)
