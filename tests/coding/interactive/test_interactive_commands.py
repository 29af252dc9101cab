"""The interactive mode's settings and project commands (``/settings``, ``/scoped-models``, ``/trust``,
``/import``), the external editor, clipboard paste and the extension API members of the terminal UI,
driven headlessly over a real session and the fake LLM server."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.coding.interactive.test_interactive import SIZE, make_app, screen_text, type_text, until  # noqa: F401


def flat_text(app: Any) -> str:
    """The screen's words joined by single spaces: a long notice wraps at any word."""
    return " ".join(screen_text(app).split())


def dialog_text(app: Any) -> str:
    """``flat_text`` without the dialog's border glyphs, so a wrapped line reads as one, then each open
    picker's title and whole labels (its rows are cut at the screen's width, and a test's paths are
    longer under xdist)."""
    from pi_coding_agent.coding.modes.interactive.picker import Picker

    words = [word for word in screen_text(app).split() if word not in "│▊▎"]
    for picker in app.screen.query(Picker):
        words += " ".join([*picker.title_lines, *(label for _, label in picker.options)]).split()
    return " ".join(words)


async def run_command(pilot: Any, line: str) -> None:
    """The command word typed key by key; its argument (often a long path) put in at once, since each
    typed key waits for a frame."""
    from pi_coding_agent.coding.modes.interactive.editor import Editor

    name, _, argument = line.partition(" ")
    await type_text(pilot, name + (" " if argument else ""))
    if argument:
        pilot.app.query_one(Editor).insert(argument)
        await pilot.pause()
    await pilot.press("enter")


def session_file(path: Path, session_id: str, cwd: Path, question: str, answer: str) -> Path:
    """A two-message session file as pi writes it."""
    usage = {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
             "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}
    lines = [{"type": "session", "version": 3, "id": session_id, "timestamp": "2026-12-01T10:00:00.000Z",
              "cwd": str(cwd)},
             {"type": "message", "id": "a1", "parentId": None, "timestamp": "2026-12-01T10:00:01.000Z",
              "message": {"role": "user", "content": [{"type": "text", "text": question}], "timestamp": 1}},
             {"type": "message", "id": "a2", "parentId": "a1", "timestamp": "2026-12-01T10:00:02.000Z",
              "message": {"role": "assistant", "content": [{"type": "text", "text": answer}], "api": "openai-completions",
                          "provider": "local", "model": "m1", "usage": usage, "stopReason": "stop", "timestamp": 2}}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


# ----------------------------------------------------------------------------- /trust


@pytest.mark.slow
async def test_trust_saves_the_decision_pi_offers(make_app, tmp_path):  # noqa: F811
    app = await make_app()
    trust_file = tmp_path / "agent" / "trust.json"
    cwd = str(tmp_path.resolve())
    async with app.run_test(size=SIZE) as pilot:
        await run_command(pilot, "/trust")
        await until(pilot, lambda: "Saved decision: none" in screen_text(app))
        assert "Current session: trusted" in screen_text(app)
        await pilot.press("down", "down", "enter")  # Do not trust
        await until(pilot, lambda: "Saved trust decision: untrusted. Restart pi" in flat_text(app))
        assert json.loads(trust_file.read_text()) == {cwd: False}
        await run_command(pilot, "/trust")
        await until(pilot, lambda: "Saved decision: untrusted" in screen_text(app))
        assert f"({cwd})" in screen_text(app)  # where the decision comes from (its own line when the path is long)
        assert "✓ Do not trust" in screen_text(app)
        await pilot.press("up", "enter")  # the cursor starts on the saved choice; one up: the parent folder,
        await until(pilot, lambda: "Saved trust decision: trusted" in flat_text(app))  # whose entry replaces
    assert json.loads(trust_file.read_text()) == {str(tmp_path.resolve().parent): True}  # the folder's own


# ----------------------------------------------------------------------------- /import


@pytest.mark.slow
async def test_import_copies_the_file_into_the_session_folder_and_opens_it(make_app, tmp_path):  # noqa: F811
    other = tmp_path / "other"
    other.mkdir()
    source = session_file(tmp_path / "exported.jsonl", "11111111-2222-3333-4444-555555555555", other,
                          "imported question", "imported answer")
    app = await make_app(no_session=False)
    async with app.run_test(size=SIZE) as pilot:
        await run_command(pilot, "/import")
        await until(pilot, lambda: "Usage: /import <path.jsonl>" in screen_text(app))
        await run_command(pilot, f"/import {source}")
        await until(pilot, lambda: "Replace current session with" in screen_text(app))
        await pilot.press("enter")
        await until(pilot, lambda: f"Session imported from: {source}" in flat_text(app))
        assert "imported answer" in screen_text(app)
        stored = app.session.sm.session_file
        assert stored is not None and stored.name == "exported.jsonl" and stored != source
        assert app.session.sm.session_id == "11111111-2222-3333-4444-555555555555"
        assert Path(app.session.rt.cwd) == other.resolve()
        await run_command(pilot, f"/import {source}")  # the name is taken now: a numbered copy
        await until(pilot, lambda: "Replace current session with" in screen_text(app))
        await pilot.press("enter")
        await until(pilot, lambda: app.session.sm.session_file != stored)
        assert app.session.sm.session_file.name == "exported-1.jsonl"


@pytest.mark.slow
async def test_import_of_a_missing_file_or_declined_changes_nothing(make_app, tmp_path):  # noqa: F811
    app = await make_app(no_session=False)
    async with app.run_test(size=SIZE) as pilot:
        before = app.session.sm.session_file
        await run_command(pilot, f"/import {tmp_path / 'nope.jsonl'}")
        await until(pilot, lambda: "Replace current session" in screen_text(app))
        await pilot.press("enter")
        await until(pilot, lambda: "Failed to import session: File not found" in screen_text(app))
        await run_command(pilot, f"/import {tmp_path / 'nope.jsonl'}")
        await until(pilot, lambda: "Replace current session" in screen_text(app))
        await pilot.press("n")
        await until(pilot, lambda: "Import cancelled" in screen_text(app))
        assert app.session.sm.session_file == before


@pytest.mark.slow
async def test_import_of_a_session_whose_folder_is_gone_continues_or_forks_here(make_app, tmp_path):  # noqa: F811
    gone = tmp_path / "renamed-away"
    source = session_file(tmp_path / "exported.jsonl", "22222222-2222-3333-4444-555555555555", gone,
                          "old question", "old answer")
    original = source.read_text()
    here = str(tmp_path.resolve())
    app = await make_app(no_session=False)
    async with app.run_test(size=SIZE) as pilot:
        for keys, outcome in (("escape", "cancel"), ("down down enter", "cancel"), ("enter", "continue"),
                              ("down enter", "fork")):
            await run_command(pilot, f"/import {source}")
            await until(pilot, lambda: "Replace current session with" in screen_text(app))
            await pilot.press("enter")
            await until(pilot, lambda: f"Session cwd does not exist: {gone}" in dialog_text(app))
            assert f"Continue in {here} (asks again next time)" in dialog_text(app)
            assert f"Fork into {here} (new session ID, original kept)" in dialog_text(app)
            await pilot.press(*keys.split())
            if outcome == "cancel":
                await until(pilot, lambda: "Import cancelled" in screen_text(app))
                assert list(app.session.sm.session_dir.glob("*.jsonl")) == []  # the copy is not kept
            elif outcome == "continue":
                await until(pilot, lambda: f"Session imported from: {source}" in flat_text(app))
                assert app.session.sm.session_id == "22222222-2222-3333-4444-555555555555"
                assert app.session.rt.cwd == tmp_path.resolve() and "old answer" in screen_text(app)
                continued = app.session.sm.session_file
            else:
                await until(pilot, lambda: "Forked into new session" in flat_text(app))
                forked = app.session.sm
                assert forked.session_id != "22222222-2222-3333-4444-555555555555"
                assert forked.session_file.parent == continued.parent and forked.session_file != continued
                assert json.loads(forked.session_file.read_text().splitlines()[0])["cwd"] == here
                assert "old answer" in screen_text(app)
    assert json.loads(continued.read_text().splitlines()[0])["cwd"] == str(gone)  # continuing stores nothing
    assert source.read_text() == original
    assert sorted(p.name for p in continued.parent.glob("*.jsonl")) == sorted(
        [continued.name, forked.session_file.name])  # the fork's copy of the import was not kept


@pytest.mark.slow
async def test_resume_of_a_session_whose_folder_is_gone_asks_first(make_app, tmp_path):  # noqa: F811
    app = await make_app(no_session=False)
    folder = app.session.sm.session_dir
    folder.mkdir(parents=True, exist_ok=True)
    gone = tmp_path / "renamed-away"
    stored = session_file(folder / "gone.jsonl", "33333333-2222-3333-4444-555555555555", gone,
                          "gone question", "gone answer")
    async with app.run_test(size=SIZE) as pilot:
        for choice, notice in (("escape", "Resume cancelled"), ("enter", f"Resumed session in {tmp_path.resolve()}")):
            await run_command(pilot, "/resume")
            await until(pilot, lambda: "Resume session" in screen_text(app) and "gone question" in screen_text(app))
            await pilot.press("enter")
            await until(pilot, lambda: f"Session cwd does not exist: {gone}" in dialog_text(app))
            await pilot.press(choice)
            await until(pilot, lambda notice=notice: notice in flat_text(app))
        assert app.session.sm.session_file == stored and "gone answer" in screen_text(app)


async def test_resume_says_the_session_was_resumed(make_app, tmp_path):  # noqa: F811
    app = await make_app(no_session=False)
    folder = app.session.sm.session_dir
    folder.mkdir(parents=True, exist_ok=True)
    stored = session_file(folder / "old.jsonl", "44444444-2222-3333-4444-555555555555", tmp_path,
                          "old question", "old answer")
    async with app.run_test(size=SIZE) as pilot:
        await run_command(pilot, "/resume")
        await until(pilot, lambda: "Resume session" in screen_text(app) and "old question" in screen_text(app))
        await pilot.press("enter")
        await until(pilot, lambda: "Resumed session" in flat_text(app))
        assert app.session.sm.session_file == stored and "old answer" in screen_text(app)


# ----------------------------------------------------------------------------- trust on resume


def _project_with_template(tmp_path: Path) -> Path:
    """``other/``, a folder whose ``.pi/prompts/xprompt.md`` needs trust (no decision saved for it)."""
    other = tmp_path / "other"
    (other / ".pi" / "prompts").mkdir(parents=True)
    (other / ".pi" / "prompts" / "xprompt.md").write_text("---\ndescription: from other\n---\nhello")
    return other


def _prompts(app: Any) -> list[str]:
    return [c["name"] for c in app.session.get_commands() if c.get("source") == "prompt"]


@pytest.mark.slow
@pytest.mark.parametrize(("keys", "trusted", "saved"), [
    pytest.param(["enter"], True, True, id="trust"),
    pytest.param(["down", "down", "enter"], True, None, id="trust-session-only"),
    pytest.param(["down", "down", "down", "enter"], False, False, id="do-not-trust"),
    pytest.param(["escape"], False, None, id="escape"),
])
async def test_resume_into_an_undecided_folder_asks_whether_to_trust_it(make_app, tmp_path, keys, trusted,  # noqa: F811
                                                                         saved):
    """pi's /resume of a session of another folder asks "Trust project folder?" in the app when pi
    would ask at start-up; the answer decides that folder's resources and what trust.json keeps."""
    other = _project_with_template(tmp_path)
    app = await make_app(no_session=False)
    folder = app.session.sm.session_dir
    folder.mkdir(parents=True, exist_ok=True)
    session_file(folder / "other.jsonl", "44444444-2222-3333-4444-555555555555", other, "other question", "other answer")
    async with app.run_test(size=SIZE) as pilot:
        await run_command(pilot, "/resume")
        await until(pilot, lambda: "Resume session" in screen_text(app) and "other question" in screen_text(app))
        await pilot.press("enter")
        await until(pilot, lambda: "Do not trust (this session only)" in screen_text(app))
        asked = dialog_text(app)
        assert "Trust project folder?" in asked and str(other.resolve()) in asked
        await pilot.press(*keys)
        await until(pilot, lambda: "other answer" in screen_text(app))
        assert (app.session.rt.cwd, app.session.rt.project_trusted) == (other.resolve(), trusted)
        assert _prompts(app) == (["xprompt"] if trusted else [])
        assert ("This project is not trusted." in flat_text(app)) is not trusted  # pi's warning, as at start-up
    trust_file = tmp_path / "agent" / "trust.json"
    assert (json.loads(trust_file.read_text()) if trust_file.exists() else None) == (
        None if saved is None else {str(other.resolve()): saved})


@pytest.mark.slow
async def test_import_into_an_undecided_folder_does_not_ask(make_app, tmp_path):  # noqa: F811
    """pi's /import opens the session without the question: with no decision and the default ``ask``,
    the folder is not trusted, which the warning under the transcript says (checked against pi 1.6.0
    by hand in tmux, as the question on /resume was)."""
    other = _project_with_template(tmp_path)
    source = session_file(tmp_path / "exported.jsonl", "55555555-2222-3333-4444-555555555555", other,
                          "imported question", "imported answer")
    app = await make_app(no_session=False)
    async with app.run_test(size=SIZE) as pilot:
        await run_command(pilot, f"/import {source}")
        await until(pilot, lambda: "Replace current session with" in screen_text(app))
        await pilot.press("enter")
        await until(pilot, lambda: f"Session imported from: {source}" in flat_text(app))
        assert "Trust project folder?" not in screen_text(app)
        assert "This project is not trusted." in flat_text(app)
        assert (app.session.rt.cwd, app.session.rt.project_trusted, _prompts(app)) == (other.resolve(), False, [])


# ----------------------------------------------------------------------------- Ctrl+G


def editor_script(tmp_path: Path, body: str) -> str:
    """A stand-in for $EDITOR: a shell script run on the prompt file (its path is ``$1``)."""
    script = tmp_path / "fake-editor.sh"
    script.write_text("#!/bin/sh\n" + body + "\n")
    script.chmod(0o755)
    return str(script)


async def test_a_title_set_while_the_terminal_is_lent_waits_for_its_return(make_app, monkeypatch):  # noqa: F811
    app = await make_app()
    async with app.run_test(size=SIZE):
        written: list[str] = []
        monkeypatch.setattr(app._driver, "write", written.append)
        monkeypatch.setattr(app, "suspend", contextlib.nullcontext)  # a headless app cannot suspend
        with app.lend_terminal():
            app.set_terminal_title("one")
            app.set_terminal_title("two")
            assert written == []
        assert written == ["\x1b]0;two\x07"]
        app.set_terminal_title("three")
        assert written[-1] == "\x1b]0;three\x07"


async def test_ctrl_g_edits_the_prompt_in_the_external_editor(make_app, tmp_path, monkeypatch):  # noqa: F811
    seen = tmp_path / "seen.txt"
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", editor_script(tmp_path, f'cp "$1" {seen}; printf "from the editor\\n" > "$1"'))
    app = await make_app()
    async with app.run_test(size=SIZE) as pilot:
        await type_text(pilot, "draft")
        await pilot.press("ctrl+g")
        await until(pilot, lambda: app.editor.text == "from the editor")  # one final newline dropped
    assert seen.read_text() == "draft"


@pytest.mark.slow
async def test_a_failing_external_editor_leaves_the_prompt(make_app, tmp_path, monkeypatch):  # noqa: F811
    (tmp_path / "agent").mkdir(exist_ok=True)
    (tmp_path / "agent" / "settings.json").write_text(json.dumps(
        {"externalEditor": editor_script(tmp_path, 'echo broken > "$1"; exit 3')}))
    monkeypatch.setenv("EDITOR", "/nonexistent-editor")  # the setting comes first
    app = await make_app()
    async with app.run_test(size=SIZE) as pilot:
        await type_text(pilot, "keep me")
        await pilot.press("ctrl+g")
        await until(pilot, lambda: "External editor exited with code 3; prompt unchanged" in screen_text(app))
        assert app.editor.text == "keep me"


# ----------------------------------------------------------------------------- Ctrl+V

PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000" "1f15c4890000000d49444154789c63f8cf"
                    "c0f00f0003860180603a7d6b0000000049454e44ae426082")


def fake_xclip(tmp_path: Path, monkeypatch: Any, targets: str, image: Path | None, text: str) -> None:
    """An ``xclip`` on PATH serving a clipboard with ``targets``, the image bytes and the text; X11 only."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "xclip"
    script.write_text(f"""#!/bin/sh
case "$*" in
  *TARGETS*) printf '{targets}' ;;
  *image/png*) cat {image} ;;
  *-out*) printf '{text}' ;;
  *) exit 1 ;;
esac
""")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("DISPLAY", ":0")
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.delenv("XDG_SESSION_TYPE", raising=False)


@pytest.mark.slow
async def test_ctrl_v_saves_a_clipboard_image_and_inserts_its_path(make_app, tmp_path, monkeypatch):  # noqa: F811
    picture = tmp_path / "picture.png"
    picture.write_bytes(PNG)
    fake_xclip(tmp_path, monkeypatch, "TARGETS\\nUTF8_STRING\\nimage/png\\n", picture, "unused")
    app = await make_app()
    async with app.run_test(size=SIZE) as pilot:
        await type_text(pilot, "what is in ")
        await pilot.press("ctrl+v")
        await until(pilot, lambda: "pi-clipboard-" in app.editor.text)
    saved = Path(app.editor.text.removeprefix("what is in "))
    assert saved.name.startswith("pi-clipboard-") and saved.suffix == ".png"
    assert saved.read_bytes() == PNG
    saved.unlink()


async def test_ctrl_v_without_an_image_pastes_the_clipboard_text(make_app, tmp_path, monkeypatch):  # noqa: F811
    fake_xclip(tmp_path, monkeypatch, "TARGETS\\nUTF8_STRING\\n", None, "copied words")
    app = await make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+v")
        await until(pilot, lambda: app.editor.text == "copied words")


# ----------------------------------------------------------------------------- /settings


@pytest.mark.slow
async def test_settings_cycles_values_and_writes_settings_json(make_app, fake_llm, tmp_path):  # noqa: F811
    settings_file = tmp_path / "agent" / "settings.json"
    (tmp_path / "agent").mkdir(exist_ok=True)
    settings_file.write_text(json.dumps({"someoneElses": {"kept": 1}}))
    fake_llm.add({"content": [{"type": "thinking", "thinking": "deep musing"}, {"type": "text", "text": "answer"}]})
    app = await make_app()
    async with app.run_test(size=SIZE) as pilot:
        await run_command(pilot, "think")
        await until(pilot, lambda: "deep musing" in screen_text(app))
        await run_command(pilot, "/settings")
        await until(pilot, lambda: "Auto-compact" in screen_text(app) and "Double-escape action" in screen_text(app))
        await type_text(pilot, "hide")
        await until(pilot, lambda: "Auto-compact" not in screen_text(app))
        await pilot.press("enter")
        await until(pilot, lambda: json.loads(settings_file.read_text()).get("hideThinkingBlock") is True)
        await until(pilot, lambda: "Hide thinking" in screen_text(app) and "true" in screen_text(app))
        await pilot.press(*["backspace"] * 4)
        await type_text(pilot, "steering")
        await pilot.press("enter")  # one-at-a-time -> all, and the running session follows
        await until(pilot, lambda: app.session.agent.steering_mode == "all")
        await pilot.press("escape")
        await until(pilot, lambda: "Double-escape" not in screen_text(app))
        assert "deep musing" not in screen_text(app)  # the transcript follows hideThinkingBlock at once
    assert json.loads(settings_file.read_text()) == {"someoneElses": {"kept": 1}, "hideThinkingBlock": True,
                                                     "steeringMode": "all"}


@pytest.mark.slow
async def test_settings_space_cycles_a_choice_and_the_theme_is_picked_from_a_list(make_app, tmp_path):  # noqa: F811
    themes = tmp_path / "agent" / "themes"
    themes.mkdir(parents=True)
    (themes / "sunset.json").write_text(json.dumps({"name": "sunset", "colors": {}}))
    app = await make_app()
    async with app.run_test(size=SIZE) as pilot:
        await run_command(pilot, "/settings")
        await until(pilot, lambda: "Double-escape action" in screen_text(app))
        await type_text(pilot, "double")
        await pilot.press("space", "space")  # tree -> fork -> none
        await until(pilot, lambda: app.session.rt.settings.get("doubleEscapeAction") == "none")
        await pilot.press(*["backspace"] * 6)
        await type_text(pilot, "theme")
        await pilot.press("enter")
        await until(pilot, lambda: "sunset" in screen_text(app) and "light" in screen_text(app))
        await type_text(pilot, "sunset")
        await pilot.press("enter")
        await until(pilot, lambda: app.session.rt.settings.get("theme") == "sunset")
    saved = json.loads((tmp_path / "agent" / "settings.json").read_text())
    assert saved == {"doubleEscapeAction": "none", "theme": "sunset"}


async def test_a_theme_switched_off_in_pi_config_is_not_offered_nor_loaded(make_app, tmp_path):  # noqa: F811
    """``-themes/<file>`` (what ``pi config`` writes) leaves the theme out of /settings and start-up."""
    from pi_coding_agent.coding.modes.interactive.theme import load_palette, session_theme_files

    themes = tmp_path / "agent" / "themes"
    themes.mkdir(parents=True)
    (themes / "sunset.json").write_text(json.dumps({"name": "sunset", "colors": {"accent": "#123456"}}))
    (themes / "dusk.json").write_text(json.dumps({"name": "dusk", "colors": {}}))
    (tmp_path / "agent" / "settings.json").write_text(json.dumps({"themes": ["-themes/sunset.json"]}))
    app = await make_app()
    assert [p.name for p in session_theme_files(app.session.rt)] == ["dusk.json"]
    assert load_palette("sunset", session_theme_files(app.session.rt), [])["accent"] != "#123456"
    async with app.run_test(size=SIZE) as pilot:
        await run_command(pilot, "/settings")
        await until(pilot, lambda: "Double-escape action" in screen_text(app))
        await type_text(pilot, "theme")
        await pilot.press("enter")
        await until(pilot, lambda: "dusk" in screen_text(app) and "light" in screen_text(app))
        assert "sunset" not in screen_text(app)


# ----------------------------------------------------------------------------- /scoped-models


@pytest.mark.slow
async def test_scoped_models_sets_the_ctrl_p_cycle_and_saves_enabled_models(make_app, tmp_path):  # noqa: F811
    settings_file = tmp_path / "agent" / "settings.json"
    app = await make_app()
    async with app.run_test(size=SIZE) as pilot:
        await run_command(pilot, "/scoped-models")
        await until(pilot, lambda: "Model Configuration" in screen_text(app) and "all enabled" in screen_text(app))
        assert "✓ m1 [local]" in screen_text(app)  # the provider in brackets is text, not markup
        await pilot.press("enter")  # m1 off: the session's scope is m2 alone, before any save
        await until(pilot, lambda: "1/2 enabled (unsaved)" in screen_text(app))
        assert [m["id"] for m in app.session.rt.scoped_models] == ["m2"]
        assert not settings_file.exists()
        await pilot.press("ctrl+s")
        await until(pilot, lambda: settings_file.exists())
        assert json.loads(settings_file.read_text()) == {"enabledModels": ["local/m2"]}
        await pilot.press("escape")
        await until(pilot, lambda: "Model selection saved to settings" in screen_text(app))
        for _ in range(2):  # Ctrl+P stays on the one enabled model
            await pilot.press("ctrl+p")
            await until(pilot, lambda: app.session.agent.model["id"] == "m2")
        await run_command(pilot, "/scoped-models")
        await until(pilot, lambda: "1/2 enabled" in screen_text(app))
        await pilot.press("ctrl+a", "ctrl+s")  # everything enabled: the key goes, as pi writes it
        await until(pilot, lambda: "enabledModels" not in settings_file.read_text())
    assert app.session.rt.scoped_models == []
    assert json.loads(settings_file.read_text()) == {}


async def test_scoped_models_reorders_the_cycle_and_toggles_a_provider(make_app, tmp_path):  # noqa: F811
    settings_file = tmp_path / "agent" / "settings.json"
    app = await make_app(model_ids=("m1", "m2", "m3", "m4"))

    def order() -> list[str]:
        return [m["id"] for m in app.session.rt.scoped_models]

    async with app.run_test(size=SIZE) as pilot:
        await run_command(pilot, "/scoped-models")
        await until(pilot, lambda: "all enabled" in screen_text(app))
        await pilot.press("down", "alt+up")  # every model enabled: no order to change, as in pi
        await pilot.press("down", "down", "enter")  # m4 off: the cycle is m1, m2, m3
        await until(pilot, lambda: order() == ["m1", "m2", "m3"])
        await pilot.press("alt+up")  # a disabled model does not move
        await pilot.press("up", "up", "alt+up")  # m2 before m1; the cursor follows it
        await until(pilot, lambda: order() == ["m2", "m1", "m3"])
        await pilot.press("alt+up", "alt+down", "alt+down", "alt+down")  # the first stays; m2 goes to the end
        await until(pilot, lambda: order() == ["m1", "m3", "m2"])
        assert screen_text(app).index("✓ m3") < screen_text(app).index("✓ m2") < screen_text(app).index("  m4")
        await pilot.press("ctrl+s")
        await until(pilot, lambda: settings_file.exists())
        assert json.loads(settings_file.read_text()) == {"enabledModels": ["local/m1", "local/m3", "local/m2"]}
        await pilot.press("escape")
        for expected in ("m3", "m2", "m1"):  # Ctrl+P walks the saved order from m1
            await pilot.press("ctrl+p")
            await until(pilot, lambda expected=expected: app.session.agent.model["id"] == expected)
        await run_command(pilot, "/scoped-models")
        await until(pilot, lambda: "3/4 enabled" in screen_text(app))
        await pilot.press("ctrl+p")  # some of the provider's models on: all on, in the catalogue's order
        await until(pilot, lambda: "all enabled" in screen_text(app))
        await pilot.press("ctrl+p")  # all on: all off
        await until(pilot, lambda: "0/4 enabled" in screen_text(app))
        assert order() == []
        await type_text(pilot, "m3")  # under a search, Ctrl+A and Ctrl+X act on what it lists
        await pilot.press("ctrl+a")
        await until(pilot, lambda: order() == ["m3"])
        await pilot.press("backspace", "backspace", "ctrl+a")
        await until(pilot, lambda: "all enabled" in screen_text(app))
        await type_text(pilot, "m2")
        await pilot.press("ctrl+x")
        await until(pilot, lambda: order() == ["m1", "m3", "m4"])


# ----------------------------------------------------------------------------- extension shortcuts and renderers

EXTENSION = '''
from rich.text import Text


def setup(pi):
    async def mark(ctx):
        await pi.send_message({"customType": "card", "content": "plain content", "details": {"n": 7}})

    def draw(message, options, theme):
        if message["details"]["n"] == 0:
            return None
        return Text(f"CARD n={message['details']['n']} expanded={options['expanded']}", style=theme["accent"])

    def broken(ctx):
        raise RuntimeError("shortcut failed on purpose")

    pi.register_shortcut("ctrl+shift+y", description="Send a card", handler=mark)
    pi.register_shortcut("f6", handler=broken)
    pi.register_shortcut("escape", handler=mark)  # reserved: abort keeps it
    pi.register_message_renderer("card", draw)
'''


@pytest.mark.slow
async def test_extension_shortcuts_run_and_renderers_draw_custom_messages(make_app, tmp_path):  # noqa: F811
    extension = tmp_path / "cards.py"
    extension.write_text(EXTENSION)
    app = await make_app(extensions=[str(extension)])
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: "Extension shortcut 'escape'" in screen_text(app))
        assert "conflicts with built-in shortcut. Skipping." in flat_text(app)
        await pilot.press("ctrl+shift+y")
        await until(pilot, lambda: "CARD n=7 expanded=False" in screen_text(app))
        assert "plain content" not in screen_text(app)
        await pilot.press("f6")
        await until(pilot, lambda: "shortcut failed on purpose" in flat_text(app))
        await run_command(pilot, "/hotkeys")
        await until(pilot, lambda: "Send a card" in screen_text(app))
        await pilot.press("escape")  # reserved: no card is sent
        await pilot.pause(0.2)
        cards = [m for m in app.session.get_messages() if m.get("customType") == "card"]
        assert len(cards) == 1
        await app.transcript.restore(app.session.get_messages())  # a reopened session draws it the same way
        await until(pilot, lambda: "CARD n=7" in screen_text(app))


def test_shortcut_precedence_follows_pi():
    from pi_coding_agent.coding.extensions.registry import Extension, Shortcut
    from pi_coding_agent.coding.modes.interactive.extension_hooks import shortcut_table
    from pi_coding_agent.coding.modes.interactive.keys import KeyMap

    class Source:
        def __init__(self, name: str) -> None:
            self.path = Path(name)

    def ext(name: str, *keys: str) -> Extension:
        made = Extension(Source(name))  # type: ignore[arg-type]
        made.shortcuts = {key: Shortcut(key, None, lambda ctx: None) for key in keys}
        return made

    first, second = ext("a.py", "ctrl+o", "ctrl+y"), ext("b.py", "Ctrl+Y", "alt+up", "ctrl+k")
    table, warnings = shortcut_table([first, second], KeyMap())
    assert "ctrl+o" not in table and "ctrl+k" not in table  # app.tools.expand and deleteToLineEnd are reserved
    assert table["ctrl+y"][0] is second and table["alt+up"][0] is second  # yank and dequeue are not reserved
    assert len(warnings) == 6 and "built-in shortcut for tui.editor.yank" in warnings[1]
    assert "built-in shortcut for app.message.dequeue" in warnings[4]


@pytest.mark.slow
async def test_settings_sets_and_clears_a_per_model_thinking_level(make_app, tmp_path):  # noqa: F811
    settings_file = tmp_path / "agent" / "settings.json"
    app = await make_app()
    async with app.run_test(size=SIZE) as pilot:
        await run_command(pilot, "/settings")
        await until(pilot, lambda: "Default thinking level per model" in screen_text(app))
        await type_text(pilot, "per")
        await until(pilot, lambda: "Auto-compact" not in screen_text(app))
        assert "none" in screen_text(app)
        await pilot.press("enter")
        await until(pilot, lambda: "select a model to configure" in screen_text(app))
        await pilot.press("enter")  # the current model, m1, comes first
        await until(pilot, lambda: "Thinking level for m1 [local]" in screen_text(app))
        await pilot.press("enter")  # m1 has no reasoning: "off" is its only level
        await until(pilot, lambda: "1 configured" in screen_text(app))
        assert json.loads(settings_file.read_text()) == {"modelThinkingLevels": {"local/m1": "off"}}
        await pilot.press("enter", "enter")
        await until(pilot, lambda: "(clear override)" in screen_text(app) and "✓ off" in screen_text(app))
        await pilot.press("down", "enter")
        await until(pilot, lambda: "none" in screen_text(app) and "Thinking level for" not in screen_text(app))
    assert json.loads(settings_file.read_text()) == {}


@pytest.mark.slow
async def test_a_theme_picked_in_settings_recolours_the_screen_at_once(make_app, fake_llm, tmp_path):  # noqa: F811
    app = await make_app()
    async with app.run_test(size=SIZE) as pilot:
        await run_command(pilot, "hello")
        await until(pilot, lambda: "ok" in screen_text(app) and not app.session.is_streaming)
        dark_background = app.current_theme.background
        await run_command(pilot, "/settings")
        await until(pilot, lambda: "Theme" in screen_text(app))
        await type_text(pilot, "theme")
        await pilot.press("enter")
        await until(pilot, lambda: "light" in screen_text(app) and "✓ system" in screen_text(app))
        await type_text(pilot, "light")
        await pilot.press("enter")
        await until(pilot, lambda: app.palette.get("appearance") == "light")
        await pilot.press("escape")
        await until(pilot, lambda: app.current_theme.background != dark_background and "hello" in screen_text(app))
        assert app.transcript.palette is app.palette and "ok" in screen_text(app)


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not on PATH")
@pytest.mark.slow
async def test_a_typescript_extension_shortcut_runs_in_the_sidecar(make_app, tmp_path):  # noqa: F811
    extension = tmp_path / "keys.ts"
    extension.write_text('export default function (pi) {\n'
                         '  pi.registerShortcut("ctrl+shift+u", { description: "Say hi from TypeScript",\n'
                         '    handler: async (ctx) => { ctx.ui.notify("hello from the ts shortcut"); } });\n'
                         '}\n')
    app = await make_app(extensions=[str(extension)])
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: any(ext.shortcuts for ext in app.session.extensions.extensions), timeout=120)
        await pilot.press("ctrl+shift+u")
        await until(pilot, lambda: "hello from the ts shortcut" in screen_text(app))
