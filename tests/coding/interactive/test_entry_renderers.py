"""``register_entry_renderer`` in the terminal UI: a ``custom`` entry an extension appends
(``append_entry``, never sent to the model) shows in the transcript where it was appended when a
renderer draws it, and again, in order with the messages, when the session is reopened; without a
renderer it shows nothing; a renderer that raises shows pi's "renderer failed" row in its place."""

from __future__ import annotations

from typing import Any

import pytest

from pi_coding_agent.coding.modes.interactive import history
from tests.coding.interactive.test_interactive import SIZE, make_app, screen_text, type_text, until  # noqa: F401

pytestmark = pytest.mark.slow

EXTENSION = '''
from rich.text import Text


def setup(pi):
    def appender(custom_type):
        async def append(args, ctx):
            pi.append_entry(custom_type, {"title": args, "count": 17})
        return append

    for name, custom_type in (("card", "status-card"), ("quiet", "no-renderer"), ("broken", "broken-card")):
        pi.register_command(name, handler=appender(custom_type))

    def card(entry, options, theme):
        data = entry["data"]
        return Text(f"CARD {data['title']}: {data['count']} expanded={options['expanded']}", style=theme["accent"])

    def broken(entry, options, theme):
        raise RuntimeError("entry renderer broke on purpose")

    pi.register_entry_renderer("status-card", card)
    pi.register_entry_renderer("broken-card", broken)
'''


FAILED = "[broken-card] renderer failed: entry renderer broke on purpose"


async def _say(pilot: Any, text: str, shown: str) -> None:
    await type_text(pilot, text)
    await pilot.press("enter")
    await until(pilot, lambda: shown in " ".join(screen_text(pilot.app).split()))  # a notice may wrap


def _rows(app: Any, *texts: str) -> list[int]:
    """The screen row of each text (its first)."""
    rows = screen_text(app).splitlines()
    return [next(i for i, row in enumerate(rows) if text in row) for text in texts]


async def test_custom_entries_show_where_appended_live_and_after_reopening(make_app, fake_llm, tmp_path):  # noqa: F811
    fake_llm.add({"content": [{"type": "text", "text": "answer one"}]},
                 {"content": [{"type": "text", "text": "answer two"}]})
    extension = tmp_path / "cards.py"
    extension.write_text(EXTENSION)
    app = await make_app(no_session=False, extensions=[str(extension)])
    errors: list[Any] = []
    async with app.run_test(size=SIZE) as pilot:
        app.session.subscribe(lambda event: errors.append(event) if event["type"] == "extension_error" else None)
        await _say(pilot, "hello", "answer one")
        await _say(pilot, "/card first", "CARD first: 17 expanded=False")
        await type_text(pilot, "/quiet hidden-entry")
        await pilot.press("enter")
        await until(pilot, lambda: any(e.get("customType") == "no-renderer" for e in app.session.sm.get_entries()))
        await _say(pilot, "/broken failing-entry", FAILED)
        await _say(pilot, "again", "answer two")
        assert "hidden-entry" not in screen_text(app) and "failing-entry" not in screen_text(app)
        assert _rows(app, "hello", "answer one", "CARD first", "again", "answer two") == \
            sorted(_rows(app, "hello", "answer one", "CARD first", "again", "answer two"))
        assert all(m.get("customType") is None for m in app.session.get_messages())  # not sent to the model
        for _ in range(2):  # drawn again, the failure too
            await app.transcript.restore(history.items(app.session))
            await until(pilot, lambda: "CARD first: 17" in screen_text(app) and FAILED in screen_text(app))
        assert errors == []  # as pi: the row says it, no extension error besides
        session_file = app.session.sm.session_file

    reopened = await make_app(no_session=False, session=str(session_file), extensions=[str(extension)])
    async with reopened.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: "CARD first: 17" in screen_text(reopened) and "answer two" in screen_text(reopened))
        order = ("hello", "answer one", "CARD first", "again", "answer two")
        assert _rows(reopened, *order) == sorted(_rows(reopened, *order))
        assert "hidden-entry" not in screen_text(reopened) and "failing-entry" not in screen_text(reopened)


async def test_ctrl_o_draws_a_live_entry_again_expanded(make_app, tmp_path):  # noqa: F811
    """Ctrl+O asks an entry shown live for its expanded drawing, as it does a reopened session's."""
    extension = tmp_path / "cards.py"
    extension.write_text(EXTENSION)
    app = await make_app(extensions=[str(extension)])
    async with app.run_test(size=SIZE) as pilot:
        await _say(pilot, "/card live", "CARD live: 17 expanded=False")
        await pilot.press("ctrl+o")
        await until(pilot, lambda: "CARD live: 17 expanded=True" in screen_text(app))
        await pilot.press("ctrl+o")
        await until(pilot, lambda: "CARD live: 17 expanded=False" in screen_text(app))


STREAMING_EXTENSION = '''
from rich.text import Text


def setup(pi):
    appended = []

    def on_update(event, ctx):
        if not appended:
            appended.append(pi.append_entry("note", {"text": "NOTE while streaming"}))

    pi.on("message_update", on_update)
    pi.register_entry_renderer("note", lambda entry, options, theme: Text(entry["data"]["text"]))
'''


async def test_an_entry_appended_while_an_answer_streams_shows_above_it(make_app, fake_llm, tmp_path):  # noqa: F811
    fake_llm.add({"content": [{"type": "text", "text": "streamed " * 30 + "END"}], "chunkSize": 10, "chunkDelayMs": 10})
    extension = tmp_path / "notes.py"
    extension.write_text(STREAMING_EXTENSION)
    app = await make_app(extensions=[str(extension)])
    async with app.run_test(size=SIZE) as pilot:
        await _say(pilot, "talk", "END")
        assert _rows(app, "talk", "NOTE while streaming", "streamed") == \
            sorted(_rows(app, "talk", "NOTE while streaming", "streamed"))
