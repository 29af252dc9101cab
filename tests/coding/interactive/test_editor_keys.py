"""The prompt editor's keys: each applies in the order it arrived, and pi's editor actions work with
pi's default keys and with ``keybindings.json`` overrides."""

from __future__ import annotations

from typing import Any

import pytest
from textual import events

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
