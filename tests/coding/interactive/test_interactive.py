"""The interactive mode driven headlessly (Textual's ``run_test`` pilot) over a real session and the
fake LLM server: what a user types, what the screen shows, and what the session did."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from pi_coding_agent.coding.bootstrap import create_session
from pi_coding_agent.coding.modes import warm_up
from pi_coding_agent.coding.modes.interactive import blocks, build_app, completion, footer, theme
from pi_coding_agent.coding.modes.interactive.extension_ui import TuiExtensionUI
from pi_coding_agent.coding.modes.interactive.keys import KeyMap, normalise
from pi_coding_agent.coding.modes.interactive.picker import Picker
from pi_coding_agent.coding.options import CliArgs

SIZE = (110, 36)


def write_models(agent: Path, base_url: str, ids: tuple[str, ...] = ("m1", "m2")) -> None:
    agent.mkdir(parents=True, exist_ok=True)
    models = [{"id": name, "contextWindow": 100_000, "maxTokens": 1000} for name in ids]
    (agent / "models.json").write_text(json.dumps({"providers": {"local": {
        "baseUrl": f"{base_url}/v1", "api": "openai-completions", "apiKey": "dummy", "models": models}}}))


def screen_text(app: Any) -> str:
    """The characters on the app's screen, row by row."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


async def until(pilot: Any, predicate: Any, timeout: float = 30.0) -> None:
    """Let the app run until ``predicate()`` holds (it fails the test on timeout)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "timed out; the screen:\n" + screen_text(pilot.app)
        await pilot.pause(0.05)


def app_maker(tmp_path: Path, fake_llm: Any, sessions: list[Any]) -> Callable[..., Awaitable[Any]]:
    """``make(**cli_options)``: an app over a new session on the fake server (``model_ids``: the models
    it offers); the sessions it makes go into ``sessions``, for the fixture to shut down."""

    async def make(model_ids: tuple[str, ...] = ("m1", "m2"), **options: Any) -> Any:
        write_models(tmp_path / "agent", fake_llm.url, model_ids)
        options.setdefault("no_session", True)
        args = CliArgs(provider="local", model="m1", **options)
        ui = TuiExtensionUI()
        session = await create_session(args, "interactive", ui, cwd=tmp_path, agent_dir=tmp_path / "agent")
        sessions.append(session)
        return build_app(session, ui, args)

    return make


@pytest.fixture
async def make_app(tmp_path, fake_llm):
    sessions: list[Any] = []
    yield app_maker(tmp_path, fake_llm, sessions)
    for session in sessions:
        await session.shutdown()


async def type_text(pilot: Any, text: str) -> None:
    await pilot.press(*["space" if ch == " " else ch for ch in text])


async def send(pilot: Any, text: str, shown: Callable[[], bool]) -> None:
    """Type ``text``, press Enter, and let the app run until ``shown()`` holds."""
    await type_text(pilot, text)
    await pilot.press("enter")
    await until(pilot, shown)


@pytest.mark.slow
async def test_a_prompt_streams_its_answer_and_a_tool_call_with_output(make_app, fake_llm):
    fake_llm.add({"content": [{"type": "toolCall", "id": "c1", "name": "bash",
                               "arguments": {"command": "echo tool-said-this"}}]},
                 {"content": [{"type": "text", "text": "All **done** here.\n\nSecond paragraph."}]})
    app = await make_app()
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "run it", lambda: "Second paragraph." in screen_text(app) and "All done here." in screen_text(app))
        text = screen_text(app)  # the markdown is rendered: **done** shows as done
        assert "run it" in text
        assert "$ echo tool-said-this" in text and text.count("tool-said-this") == 2
        assert app.session.get_messages()[-1]["content"][0]["text"].startswith("All **done**")


@pytest.mark.slow
async def test_escape_aborts_a_streaming_answer(make_app, fake_llm):
    fake_llm.add({"content": [{"type": "text", "text": "word " * 400}], "chunkSize": 5, "chunkDelayMs": 20})
    app = await make_app()
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "talk", lambda: "word" in screen_text(app))
        await pilot.press("escape")
        await until(pilot, lambda: not app.session.is_streaming)
        await until(pilot, lambda: "Operation aborted" in screen_text(app))
        assert app.session.get_messages()[-1]["stopReason"] == "aborted"


@pytest.mark.slow
async def test_the_follow_up_key_queues_a_message_shown_until_delivered(make_app, fake_llm):
    fake_llm.add({"content": [{"type": "text", "text": "first " * 300}], "chunkSize": 6, "chunkDelayMs": 20},
                 {"content": [{"type": "text", "text": "second answer"}]})
    app = await make_app()
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "one", lambda: "first" in screen_text(app))
        app.editor.load_text("later please")  # typed at once: the stream is still running
        await pilot.press("alt+enter")
        await until(pilot, lambda: "follow-up: later please" in screen_text(app))
        await until(pilot, lambda: "second answer" in screen_text(app))
        assert "follow-up: later please" not in screen_text(app)
        users = [m for m in app.session.get_messages() if m["role"] == "user"]
        assert [blocks.message_text(m) for m in users] == ["one", "later please"]


@pytest.mark.slow
async def test_enter_while_streaming_steers_the_run(make_app, fake_llm):
    fake_llm.add({"content": [{"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "sleep 1"}}]},
                 {"content": [{"type": "text", "text": "steered answer"}]})
    app = await make_app()
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "go", lambda: "$ sleep 1" in screen_text(app))
        app.editor.load_text("change course")
        await pilot.press("enter")
        await until(pilot, lambda: "steered answer" in screen_text(app))
    users = [blocks.message_text(m) for m in app.session.get_messages() if m["role"] == "user"]
    assert users == ["go", "change course"]
    assert "change course" in json.dumps(fake_llm.requests[-1]["body"]["messages"])


@pytest.mark.slow
async def test_thinking_blocks_collapse_with_the_setting_and_ctrl_t(make_app, fake_llm, tmp_path):
    (tmp_path / "agent").mkdir(exist_ok=True)
    (tmp_path / "agent" / "settings.json").write_text(json.dumps({"hideThinkingBlock": True}))
    fake_llm.add({"content": [{"type": "thinking", "thinking": "secret musing"}, {"type": "text", "text": "answer"}]})
    app = await make_app()
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "think", lambda: "answer" in screen_text(app) and "Thinking…" in screen_text(app))
        assert "secret musing" not in screen_text(app)
        await pilot.press("ctrl+t")
        await until(pilot, lambda: "secret musing" in screen_text(app))


async def test_ctrl_o_expands_tool_output_live_and_restored(make_app, fake_llm):
    fake_llm.add({"content": [{"type": "toolCall", "id": "c1", "name": "bash",
                               "arguments": {"command": "seq 1 15 | sed 's/^/row-/'"}}]},
                 {"content": [{"type": "text", "text": "counted"}]})
    app = await make_app()
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "count", lambda: "counted" in screen_text(app) and not app.session.is_streaming)
        assert "5 earlier lines (ctrl+o to expand)" in screen_text(app) and "row-5\n" not in screen_text(app)
        await pilot.press("ctrl+o")
        await until(pilot, lambda: "row-1 " in screen_text(app) and "earlier lines" not in screen_text(app))
        await app.transcript.restore(app.session.get_messages())  # the same messages, reopened
        await until(pilot, lambda: "row-1 " in screen_text(app))
        await pilot.press("ctrl+o")
        await until(pilot, lambda: "5 earlier lines" in screen_text(app) and "row-1 " not in screen_text(app))


async def test_a_reader_scrolled_up_stays_put_while_the_answer_grows(make_app):
    def delta(text: str) -> dict[str, Any]:
        return {"type": "message_update",
                "assistantMessageEvent": {"type": "text_delta", "contentIndex": 0, "delta": text}}

    app = await make_app()
    async with app.run_test(size=SIZE) as pilot:
        transcript = app.transcript
        transcript.handle({"type": "message_start", "message": {"role": "assistant", "content": []}})
        transcript.handle(delta("\n\n".join(f"Line {i}" for i in range(40))))
        await until(pilot, lambda: "Line 39" in screen_text(app))
        transcript.scroll_home(animate=False)
        await until(pilot, lambda: "Line 0" in screen_text(app))
        transcript.handle(delta("\n\nLine 40"))
        await pilot.pause(0.3)
        assert "Line 0" in screen_text(app) and "Line 40" not in screen_text(app)
        transcript.scroll_end(animate=False)
        transcript.handle(delta("\n\nLine 41"))
        await until(pilot, lambda: "Line 41" in screen_text(app))


@pytest.mark.slow
async def test_tree_navigation_and_resume(make_app, fake_llm, tmp_path):
    fake_llm.add({"content": [{"type": "text", "text": "answer one"}]}, {"content": [{"type": "text", "text": "answer two"}]},
                 {"content": [{"type": "text", "text": "other session answer"}]})
    app = await make_app(no_session=False)
    async with app.run_test(size=SIZE) as pilot:
        for text, answer in (("first question", "answer one"), ("second question", "answer two")):
            await send(pilot, text, lambda answer=answer: answer in screen_text(app))
        await send(pilot, "/tree", lambda: "Session tree" in screen_text(app))
        await send(pilot, "first question", lambda: app.editor.text == "first question")  # a user entry comes back to edit
        assert "answer one" not in screen_text(app)
        first_file = app.session.sm.session_file
        await pilot.press("ctrl+c")  # clears the editor
        await send(pilot, "/new", lambda: app.session.sm.session_file != first_file)
        await send(pilot, "elsewhere", lambda: "other session answer" in screen_text(app))
        await send(pilot, "/resume", lambda: "Resume session" in screen_text(app) and "first question" in screen_text(app))
        await pilot.press("enter")
        await until(pilot, lambda: app.session.sm.session_file == first_file)
        await until(pilot, lambda: "first question" in screen_text(app) and "elsewhere" not in screen_text(app))


@pytest.mark.slow
async def test_a_long_session_opens_with_its_latest_messages_and_pages_up_to_older_ones(
        make_app, fake_llm, tmp_path, monkeypatch):
    from pi_coding_agent.coding.modes.interactive import entries, transcript

    monkeypatch.setattr(transcript, "RESTORED_MESSAGES", 4)

    def chunks(app: Any) -> int:
        """The restored chunks drawn so far."""
        return sum(isinstance(entry, entries.HistoryEntry) for entry in app.transcript.entries)

    lines = [{"type": "session", "version": 3, "id": "long", "timestamp": "2026-01-01T00:00:00.000Z",
              "cwd": str(tmp_path)}]
    for i in range(12):
        message = ({"role": "user", "content": [{"type": "text", "text": f"question-{i}"}], "timestamp": 1}
                   if i % 2 == 0 else {"role": "assistant", "content": [{"type": "text", "text": f"answer-{i}"}],
                                       "stopReason": "stop", "timestamp": 1})
        lines.append({"type": "message", "id": f"e{i}", "parentId": f"e{i - 1}" if i else None,
                      "timestamp": "2026-01-01T00:00:00.000Z", "message": message})
    path = tmp_path / "long.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    app = await make_app(no_session=False, session=str(path))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: "answer-11" in screen_text(app))
        assert "answer-7" not in screen_text(app) and chunks(app) == 1
        for _ in range(3):
            await pilot.press("pageup")
        await until(pilot, lambda: chunks(app) == 3)
        app.transcript.scroll_home(animate=False)
        await until(pilot, lambda: "question-0" in screen_text(app))


@pytest.mark.parametrize("opener", ["/model", "ctrl+l"])
@pytest.mark.slow
async def test_model_picker_switches_the_model(make_app, fake_llm, opener):
    app = await make_app()
    async with app.run_test(size=SIZE) as pilot:
        if opener == "ctrl+l":
            await pilot.press("ctrl+l")
        else:
            await type_text(pilot, opener)
            await pilot.press("enter")
        await until(pilot, lambda: "Select model" in screen_text(app))
        await send(pilot, "m2", lambda: app.session.agent.model["id"] == "m2")
        await until(pilot, lambda: "m2" in screen_text(app).splitlines()[-1])


@pytest.mark.slow
async def test_model_with_a_partial_name_opens_the_picker_searched_for_it(make_app):
    from pi_coding_agent.coding.modes.interactive import commands

    app = await make_app(model_ids=("m1", "m2", "x3"))
    async with app.run_test(size=SIZE) as pilot:
        ran = asyncio.ensure_future(commands.run(app, "/model m"))  # typed, Enter would take a completion
        await until(pilot, lambda: "Select model" in screen_text(app) and "local/m2" in screen_text(app))
        assert app.query_one(Picker).query_text == "m" and "local/x3" not in screen_text(app)
        await pilot.press("enter")  # the first match: m2 is shorter than the current "m1  ✓"
        await until(pilot, lambda: app.session.agent.model["id"] == "m2")
        assert await ran


async def test_the_provider_stack_and_markdown_load_in_the_background_once_the_editor_shows(make_app, monkeypatch):
    """As in the RPC mode after its first answer: the first prompt then finds them imported."""
    warmed: list[tuple[Any, ...]] = []
    monkeypatch.setattr(warm_up, "warm_up_after_first_answer", lambda *args: warmed.append(args))
    app = await make_app()
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: bool(warmed))
    model, has_credentials, also = warmed[0]
    assert model["id"] == "m1" and has_credentials and "rich.markdown" in also and len(warmed) == 1


async def test_the_pickers_css_is_parsed_while_idle_before_the_first_picker(make_app, monkeypatch):
    monkeypatch.setattr(warm_up, "warm_up_after_first_answer", lambda *args: None)
    app = await make_app()
    async with app.run_test(size=SIZE) as pilot:
        parsed = lambda: {name for _, name in app.stylesheet.source}  # noqa: E731
        await until(pilot, lambda: "Picker.DEFAULT_CSS" in parsed())
        assert "PickerScreen.DEFAULT_CSS" in parsed() and app.screen_stack == [app.screen]


@pytest.mark.slow
async def test_ctrl_d_on_an_empty_editor_quits_and_ctrl_c_twice_too(make_app):
    app = await make_app()
    async with app.run_test(size=SIZE) as pilot:
        await type_text(pilot, "x")
        await pilot.press("ctrl+d")  # not empty: deletes forward, stays
        await pilot.pause(0.1)
        assert app.is_running
        await pilot.press("ctrl+c")  # clears the editor
        await pilot.press("ctrl+d")
        await pilot.pause(0.1)
    assert app.return_code == 0
    second = await make_app()
    async with second.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+c")
        await pilot.pause(0.1)
        assert second.is_running and "ctrl+c again" in screen_text(second)
        await pilot.press("ctrl+c")
        await pilot.pause(0.1)
    assert second.return_code == 0


@pytest.mark.slow
async def test_bang_runs_a_shell_command_into_the_context_and_double_bang_keeps_it_out(make_app):
    app = await make_app()
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "!echo shown-and-kept", lambda: screen_text(app).count("shown-and-kept") >= 2)
        await send(pilot, "!!echo not-for-model", lambda: screen_text(app).count("not-for-model") >= 2)
    records = [m for m in app.session.get_messages() if m["role"] == "bashExecution"]
    assert [(r["command"], r.get("excludeFromContext", False)) for r in records] == [
        ("echo shown-and-kept", False), ("echo not-for-model", True)]


@pytest.mark.slow
async def test_history_and_slash_completion(make_app, fake_llm):
    app = await make_app()
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "hello", lambda: not app.session.is_streaming and "ok" in screen_text(app))
        await pilot.press("up")
        assert app.editor.text == "hello"
        await pilot.press("down")
        assert app.editor.text == ""
        await type_text(pilot, "/ses")
        await until(pilot, lambda: "/session" in screen_text(app))
        await pilot.press("tab")
        assert app.editor.text == "/session "


@pytest.mark.slow
async def test_double_escape_on_an_idle_empty_editor_opens_the_tree(make_app, fake_llm):
    app = await make_app()
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "hi", lambda: not app.session.is_streaming and "ok" in screen_text(app))
        await pilot.press("escape", "escape")
        await until(pilot, lambda: "Session tree" in screen_text(app))
        await pilot.press("escape")
        await until(pilot, lambda: "Session tree" not in screen_text(app))


@pytest.mark.slow
async def test_extension_dialogs_are_modal_screens(make_app):
    app = await make_app()
    async with app.run_test(size=SIZE) as pilot:
        answer = asyncio.ensure_future(app.ui.select("Pick one", ["alpha", "beta"]))
        await until(pilot, lambda: "Pick one" in screen_text(app))
        await pilot.press("down", "enter")
        assert await answer == "beta"
        confirmed = asyncio.ensure_future(app.ui.confirm("Sure?", "really"))
        await until(pilot, lambda: "Sure?" in screen_text(app))
        await pilot.press("y")
        assert await confirmed is True
        timed_out = await app.ui.input("Name?", timeout_ms=50)
        assert timed_out is None
        app.ui.set_status("ext", "ext-status-here")
        app.ui.set_widget("w", ["widget line"])
        await until(pilot, lambda: "ext-status-here" in screen_text(app) and "widget line" in screen_text(app))


@pytest.mark.slow
async def test_a_full_screen_list_and_the_screen_under_it_follow_a_terminal_resize(make_app):
    """A full-screen list skips the Resize of its own first layout; a real one must still reach both screens."""
    app = await make_app()
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "/settings", lambda: "Auto-compact" in screen_text(app))
        await pilot.resize_terminal(70, 20)
        under = app.screen_stack[0]
        await until(pilot, lambda: max(w.region.right for w in under.children) == 70
                    and max(w.region.right for w in app.screen.query("Vertical")) <= 70)
        assert len(screen_text(app).splitlines()) == 20
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is under)


# ----------------------------------------------------------------------------- pure parts


def test_stable_split_keeps_open_code_fences_live():
    text = "para one\n\n```py\nx = 1\n\ny = 2\n"
    assert blocks.stable_split(text, 0) == len("para one\n\n")
    closed = text + "```\n\nafter"
    assert blocks.stable_split(closed, 0) == len(closed) - len("after")


def test_markdown_draws_what_rich_markdown_draws_with_its_shared_parser(tmp_path):
    """One parser for every document: each renders as Rich's own ``Markdown`` renders it (tables,
    strikethrough, code), whatever was parsed before."""
    from rich.console import Console
    from rich.markdown import Markdown

    docs = ["# Title\n\n~~gone~~ *it* `code`\n\n| a | b |\n|---|---|\n| 1 | 2 |\n", "1. one\n\n   two\n\n```py\nx = 1\n```\n"]
    console = Console(width=50, force_terminal=True, color_system="truecolor")
    for name, code_theme in (("dark", "monokai"), ("light", "default")):
        palette = theme.load_palette(name, tmp_path, [])
        for doc in docs * 2:
            ours = list(console.render(blocks.markdown(doc, palette)))
            assert ours == list(console.render(Markdown(doc, code_theme=code_theme, hyperlinks=False)))


def test_tool_titles_say_what_the_call_does():
    assert blocks.tool_title("bash", {"command": "ls -la"}) == "$ ls -la"
    assert blocks.tool_title("read", {"path": "a.py", "offset": 10, "limit": 5}) == "read a.py:10-14"
    assert blocks.tool_title("write", {"path": "b.txt", "content": "1\n2\n3"}) == "write b.txt (3 lines)"
    assert blocks.tool_title("mcp_tool", {"q": 1}) == 'mcp_tool {"q": 1}'


async def test_the_footer_follows_a_resize(make_app):
    app = await make_app()
    async with app.run_test(size=(40, 12)) as pilot:
        await pilot.resize_terminal(90, 20)
        await until(pilot, lambda: any(row.rstrip().endswith("m1") and len(row.rstrip()) > 80
                                       for row in screen_text(app).splitlines()))


def test_footer_usage_line():
    stats = {"tokens": {"input": 1500, "output": 230, "cacheRead": 0, "cacheWrite": 0}, "cost": 0.0123}
    context = {"tokens": 5000, "contextWindow": 200_000, "percent": 2.5}
    assert footer.usage_line(stats, context, True) == "↑1.5k ↓230 $0.012 2.5%/200k (auto)"
    assert footer.short_count(1_500_000) == "1.5M"


def test_keybindings_json_overrides_and_normalises(tmp_path):
    (tmp_path / "keybindings.json").write_text(json.dumps({"app.message.followUp": ["ctrl+q"],
                                                           "app.interrupt": "Esc"}))
    keys = KeyMap.load(tmp_path)
    assert keys.action_for("ctrl+q") == "app.message.followUp"
    assert keys.action_for("alt+enter") is None
    assert keys.matches("app.interrupt", "escape")
    assert normalise("Shift+Ctrl+PageUp") == "ctrl+shift+pageup"


def test_file_completion_is_fuzzy_and_prefers_names():
    files = ["src/app/main.py", "docs/maintenance.md", "tests/test_main.py", "README.md"]
    assert completion.at_token("look at @src/ma") == "src/ma"
    assert completion.at_token("email me@x") is None
    assert [c for c, _ in completion.file_candidates("main", files)][:1] == ["src/app/main.py"]
    assert completion.file_candidates("zzz", files) == []


def test_user_theme_files_resolve_vars_and_okhsl(tmp_path):
    themes = tmp_path / "themes"
    themes.mkdir()
    (themes / "mine.json").write_text(json.dumps({"name": "mine", "vars": {"v": "#112233"},
                                                  "colors": {"accent": "v", "error": "okhsl(0 100% 50%)"}}))
    palette = theme.load_palette("mine", [themes / "mine.json"], [])
    assert palette["accent"] == "#112233"
    assert palette["error"] == "#ff0000"
    assert theme.load_palette("light", [], [])["appearance"] == "light"


async def test_transcript_text_is_selected_with_the_mouse(make_app):
    app = await make_app()
    async with app.run_test(size=SIZE) as pilot:
        app.transcript.add_notice("please select these words")
        await until(pilot, lambda: "please select these words" in screen_text(app))
        row = next(i for i, line in enumerate(screen_text(app).split("\n")) if "please select" in line)
        column = screen_text(app).split("\n")[row].index("select")
        await pilot.mouse_down(offset=(column, row))
        await pilot.hover(offset=(column + 12, row))
        await pilot.mouse_up(offset=(column + 12, row))
        await until(pilot, lambda: (app.screen.get_selected_text() or "").strip() == "select these")
