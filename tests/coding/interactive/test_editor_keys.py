"""The prompt editor's keys: each applies in the order it arrived, and pi's editor actions work with
pi's default keys and with ``keybindings.json`` overrides."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from textual import events

from pi_coding_agent.coding.modes.interactive.keys import KeyMap, normalise
from tests.coding.interactive.test_interactive import SIZE, make_app, until  # noqa: F401


def user_texts(app: Any) -> list[str]:
    return [part["text"] for m in app.session.get_messages() if m["role"] == "user"
            for part in m["content"] if part["type"] == "text"]


def burst(app: Any, *keys: str) -> None:
    """``keys`` into the editor's queue at once, as a terminal read hands them over: nothing runs between."""
    for key in keys:
        character = {"enter": "\r", "space": " "}.get(key, key if len(key) == 1 else None)
        app.editor.post_message(events.Key(key, character))


@pytest.mark.slow
async def test_keys_read_together_apply_in_the_order_they_came(make_app):  # noqa: F811
    app = await make_app()
    async with app.run_test(size=SIZE) as pilot:
        app.editor.insert("abc")
        burst(app, "ctrl+u", "h", "i", "enter")
        await until(pilot, lambda: bool(user_texts(app)) and not app.session.is_streaming)
        assert user_texts(app) == ["hi"]


@pytest.mark.slow
async def test_ctrl_c_in_a_burst_clears_only_what_came_before_it(make_app):  # noqa: F811
    app = await make_app()
    async with app.run_test(size=SIZE) as pilot:
        app.editor.insert("abc")
        burst(app, "ctrl+c", "h", "i", "ctrl+a", "ctrl+d")  # Ctrl+D on text: delete forward, no exit
        await until(pilot, lambda: app.editor.text == "i")
        burst(app, "enter")
        await until(pilot, lambda: bool(user_texts(app)) and not app.session.is_streaming)
        assert user_texts(app) == ["i"] and app.is_running


def test_textual_key_names_match_pi_key_names():
    keys = KeyMap()
    assert keys.actions_for("ctrl+right_square_bracket") == ["tui.editor.jumpForward"]
    assert keys.actions_for("ctrl+underscore") == ["tui.editor.undo"]  # the byte a terminal sends for Ctrl+-
    assert keys.actions_for("ctrl+minus") == ["tui.editor.undo"]  # the kitty keyboard protocol's name
    assert keys.actions_for("ctrl+d") == ["app.exit", "tui.editor.deleteCharForward"]
    assert normalise("ctrl++") == "ctrl++" and normalise("Alt+Ctrl+]") == "alt+ctrl+]"


def test_legacy_names_in_keybindings_json_are_read_as_pi_reads_them(tmp_path):
    (tmp_path / "keybindings.json").write_text(json.dumps({"deleteToLineStart": "alt+u", "yank": "ctrl+y",
                                                           "tui.editor.yank": "alt+p"}))
    keys = KeyMap.load(tmp_path)
    assert keys.actions_for("alt+u") == ["tui.editor.deleteToLineStart"] and keys.actions_for("ctrl+u") == []
    assert keys.actions_for("alt+p") == ["tui.editor.yank"] and keys.actions_for("ctrl+y") == []


def test_a_bad_entry_or_a_bom_in_keybindings_json_costs_only_that_entry(tmp_path):
    """A list holding a non-key once crashed start-up, and a BOM had the whole file ignored."""
    (tmp_path / "keybindings.json").write_text("\ufeff" + json.dumps(
        {"app.thinking.toggle": ["alt+t", 5], "app.clear": {"key": "ctrl+q"}, "selectModel": "ctrl+y"}),
        encoding="utf-8")
    keys = KeyMap.load(tmp_path)
    assert keys.keys["app.model.select"] == ("ctrl+y",)
    assert keys.keys["app.thinking.toggle"] == ("ctrl+t",) and keys.keys["app.clear"] == ("ctrl+c",)


async def _edited(make: Any, text: str, keys: list[str]) -> tuple[str, Any]:
    """The editor's text and cursor after ``keys`` pressed on ``text``, the cursor at its end."""
    app = await make()
    async with app.run_test(size=SIZE) as pilot:
        app.editor.load_text(text)
        app.editor.move_cursor(app.editor.document.end)
        await pilot.press(*keys)
        await pilot.pause()
        return app.editor.text, app.editor.cursor_location


@pytest.mark.slow
@pytest.mark.parametrize(("text", "keys", "expected"), [
    ("hello world", ["ctrl+a", "x"], "xhello world"),  # line start (Textual: its smart home)
    ("hello world", ["ctrl+a", "ctrl+e", "x"], "hello worldx"),
    ("hello world", ["ctrl+b", "ctrl+b", "x"], "hello worxld"),  # Textual: no binding
    ("hello world", ["ctrl+a", "ctrl+f", "x"], "hxello world"),
    ("foo.bar baz", ["ctrl+left", "ctrl+left", "x"], "foo.xbar baz"),  # alt+b arrives as ctrl+left
    ("foo bar", ["ctrl+a", "ctrl+right", "x"], "foox bar"),
    ("one two  ", ["ctrl+w"], "one "),
    ("one two", ["ctrl+w", "ctrl+w", "ctrl+y"], "one two"),  # two kills in a row: one ring entry
    ("one two", ["ctrl+a", "alt+d"], " two"),
    ("one\ntwo", ["ctrl+u", "ctrl+u"], "one"),  # at column 0: joins the line above
    ("one two", ["ctrl+a", "ctrl+k", "ctrl+k"], ""),
    ("one\ntwo", ["up", "ctrl+e", "ctrl+k"], "onetwo"),  # at the line end: joins the next line
    ("ab", ["ctrl+u", "x", "ctrl+y"], "xab"),
    ("abc", ["ctrl+a", "ctrl+d"], "bc"),  # text: delete forward, no exit
    ("a-b-c", ["ctrl+a", "ctrl+right_square_bracket", "minus", "ctrl+right_square_bracket", "minus", "x"],
     "a-bx-c"),
    ("a-b-c", ["ctrl+right_square_bracket", "ctrl+right_square_bracket", "x"], "a-b-cx"),  # again: cancelled
    ("one\ntwo", ["up", "up", "x", "down", "down", "y"], "xone\ntwoy"),  # top row: line start; bottom: end
    ("one", ["enter", "t", "w", "o", "ctrl+a", "up"], "one"),  # top row at column 0: the previous prompt
    ("one two", ["space", "t", "ctrl+underscore"], "one two"),  # undo: the typed word and its space
    ("one", ["space", "t", "w", "o", "ctrl+w", "ctrl+underscore", "ctrl+underscore"], "one"),  # step by step
])
async def test_pi_editor_keys_by_default(make_app, text, keys, expected):  # noqa: F811
    assert (await _edited(make_app, text, keys))[0] == expected


@pytest.mark.slow
async def test_yank_pop_replaces_the_yank_with_the_kill_before(make_app):  # noqa: F811
    text, _ = await _edited(make_app, "first second", ["ctrl+w", "x", "ctrl+w", "ctrl+y", "alt+y"])
    assert text == "first second"  # x killed, then "second" back in its place


@pytest.mark.slow
async def test_an_override_in_keybindings_json_moves_an_editor_action(make_app, tmp_path):  # noqa: F811
    (tmp_path / "agent").mkdir(parents=True, exist_ok=True)
    (tmp_path / "agent" / "keybindings.json").write_text(json.dumps({"tui.editor.deleteToLineStart": "alt+u",
                                                                     "tui.editor.cursorLineStart": []}))
    text, cursor = await _edited(make_app, "abc def", ["ctrl+u", "alt+u"])
    assert text == "" and cursor == (0, 0)  # Ctrl+U no longer deletes: its text stayed for Alt+U
    text, cursor = await _edited(make_app, "abc", ["ctrl+a", "home"])
    assert cursor == (0, 3)  # unbound: Home and Ctrl+A do nothing


# ----------------------------------------------------------------------------- bracketed paste


async def _pasted(pilot: Any, *texts: str) -> str:
    """The editor's text once each of ``texts`` came as one bracketed paste."""
    for text in texts:
        pilot.app.editor.post_message(events.Paste(text))
    await pilot.pause()
    return str(pilot.app.editor.text)


async def test_a_paste_lands_once_cleaned_as_pi_cleans_it(make_app):  # noqa: F811
    """Once (``TextArea``'s own handler inserted it again); CR LF and CR as LF, a tab as four spaces,
    a CSI-u Ctrl+J as a newline, other control characters (an escape sequence's ESC) dropped."""
    app = await make_app()
    async with app.run_test(size=SIZE) as pilot:
        text = await _pasted(pilot, "one\r\ntwo\rthree\tafter\x1b[A up\x07\x1b[106;5ufour")
        assert text == "one\ntwo\nthree    after[A up\nfour"


async def test_a_path_pasted_onto_a_word_gets_a_space(make_app):  # noqa: F811
    app = await make_app()
    async with app.run_test(size=SIZE) as pilot:
        app.editor.insert("look at")
        assert await _pasted(pilot, "/tmp/x", " and", "./y") == "look at /tmp/x and ./y"


async def test_a_paste_past_1000_characters_is_a_marker_sent_in_full(make_app, fake_llm):  # noqa: F811
    app = await make_app()
    long = "x" * 1001
    async with app.run_test(size=SIZE) as pilot:
        text = await _pasted(pilot, long, "\n".join("l" * 11))
        assert text == "[paste #1 1001 chars][paste #2 +11 lines]"
        burst(app, "enter")
        await until(pilot, lambda: bool(user_texts(app)) and not app.session.is_streaming)
        assert user_texts(app) == [long + "\n".join("l" * 11)]


async def test_a_paste_into_an_extension_s_input_keeps_every_line_joined(make_app):  # noqa: F811
    """Textual's input kept only the first line of a paste; pi's joins them."""
    from textual.widgets import Input

    app = await make_app()
    async with app.run_test(size=SIZE) as pilot:
        answer = asyncio.ensure_future(app.ui.input("Name?"))
        await until(pilot, lambda: bool(app.screen.query(Input)))
        app.screen.query_one(Input).post_message(events.Paste("first\r\nsecond\tthird\n"))
        await until(pilot, lambda: app.screen.query_one(Input).value == "firstsecond    third")
        await pilot.press("enter")
        assert await answer == "firstsecond    third"
