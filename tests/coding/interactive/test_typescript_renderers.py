"""A TypeScript extension's ``registerMessageRenderer`` and ``registerEntryRenderer`` in the terminal
UI: the renderer runs in the Node.js sidecar with pi-tui's components, and its lines (ANSI styling
kept) draw the custom messages the extension sends and the entries it appends; a message renderer
that returns nothing or throws leaves the default drawing; for an entry, nothing, or pi's
"renderer failed" row when its renderer throws."""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest

from pi_coding_agent.coding.modes.interactive.theme import DARK, LIGHT
from tests.coding.extensions.test_typescript_extensions import needs_node, ts_runtime  # noqa: F401
from tests.coding.interactive.test_interactive import SIZE, make_app, screen_text, type_text, until  # noqa: F401
from tests.coding.interactive.test_interactive_commands import flat_text
from tests.coding.interactive.test_interactive_tmux import Tmux
from tests.coding.packages.test_packages import _env
from tests.support.cli_sides import needs_reference, pi_command

pytestmark = [pytest.mark.slow, needs_node]

EXTENSION = """
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { Box, Spacer, Text } from "@earendil-works/pi-tui";

export default function (pi: ExtensionAPI) {
  pi.registerMessageRenderer("status-update", (message, options, theme) => {
    const details = message.details as { level: string };
    const box = new Box(options.outputPad, 0, (t) => theme.bg("customMessageBg", t));
    box.addChild(new Text(`${theme.fg("success", `[${details.level.toUpperCase()}]`)} ${message.content}`, 0, 0));
    box.addChild(new Spacer(1));
    box.addChild(new Text(`expanded=${options.expanded} ${options.keyHint("app.tools.expand", "to expand")}`, 0, 0));
    return box;
  });
  pi.registerMessageRenderer("plain-note", () => undefined);
  pi.registerMessageRenderer("broken-note", () => {
    throw new Error("renderer broke on purpose");
  });
  pi.registerEntryRenderer("status-card", (entry, { expanded }, theme) => {
    const data = entry.data as { title: string; count: number };
    const box = new Box(1, 0, (t) => theme.bg("customMessageBg", t));
    box.addChild(new Text(`${theme.fg("accent", data.title)}: ${data.count} expanded=${expanded}`, 0, 0));
    return box;
  });
  pi.registerEntryRenderer("broken-card", () => {
    throw new Error("entry renderer broke on purpose");
  });
  for (const [name, customType] of [["card", "status-card"], ["hidden", "no-renderer"], ["brokencard", "broken-card"]]) {
    pi.registerCommand(name, { handler: async (args) => pi.appendEntry(customType, { title: args, count: 17 }) });
  }
  for (const [name, customType] of [["status", "status-update"], ["plain", "plain-note"], ["broken", "broken-note"]]) {
    pi.registerCommand(name, {
      handler: async (args) => {
        await pi.sendMessage({ customType, content: args, display: true, details: { level: "info" } });
      },
    });
  }
}
"""

LONG = " ".join(f"word{i}" for i in range(40))  # wraps at the transcript's width


async def _run(pilot: Any, line: str) -> None:
    await type_text(pilot, line.split(" ")[0] + " ")
    pilot.app.editor.insert(line.partition(" ")[2])
    await pilot.pause()
    await pilot.press("enter")


def _styles_of(app: Any, text: str) -> list[Any]:
    """The styles of the screen's segments holding ``text``."""
    return [segment.style for strip in app.screen._compositor.render_strips() for segment in strip
            if text in segment.text]


async def test_a_typescript_message_renderer_draws_the_custom_messages_it_sends(make_app, tmp_path: Path):  # noqa: F811
    extension = tmp_path / "renderer.ts"
    extension.write_text(EXTENSION)
    app = await make_app(extensions=[str(extension)])
    async with app.run_test(size=SIZE) as pilot:
        await _run(pilot, f"/status all good {LONG}")
        await until(pilot, lambda: "[INFO] all good" in screen_text(app))
        assert "expanded=false ctrl+o to expand" in screen_text(app)
        assert "[status-update]" not in screen_text(app)  # not the default drawing
        rows = [row for row in screen_text(app).splitlines() if "word" in row]
        assert len(rows) > 1 and all(len(row.rstrip()) <= SIZE[0] for row in rows)  # wrapped in Node at the width
        assert " ".join(" ".join(rows).split()).endswith(LONG)
        info = _styles_of(app, "[INFO]")
        assert info and info[0].color.triplet.hex == DARK["success"]  # the theme's colour, through ANSI
        assert info[0].bgcolor.triplet.hex == DARK["customMessageBg"]  # the Box's background

        app.use_palette(LIGHT)  # another theme: drawn again in its colours
        await until(pilot, lambda: any(style.color.triplet.hex == LIGHT["success"] for style in _styles_of(app, "[INFO]")))
        app.use_palette(DARK)
        await until(pilot, lambda: any(style.color.triplet.hex == DARK["success"] for style in _styles_of(app, "[INFO]")))

        await pilot.resize_terminal(60, SIZE[1])  # drawn again in Node at the new width
        await until(pilot, lambda: "[INFO] all good" in screen_text(app) and  # not the default drawing meanwhile
                    len([row for row in screen_text(app).splitlines() if "word" in row]) > len(rows))
        assert max(len(row.rstrip()) for row in screen_text(app).splitlines()) <= 60
        await pilot.resize_terminal(*SIZE)

        await _run(pilot, "/plain nothing drawn here")
        await until(pilot, lambda: "nothing drawn here" in screen_text(app))  # the default drawing
        await _run(pilot, "/broken still shown")
        await until(pilot, lambda: "still shown" in screen_text(app) and "renderer broke on purpose" in flat_text(app))
        await pilot.pause(0.2)
        assert flat_text(app).count("renderer broke on purpose") == 1  # reported once, though drawn again

        await app.transcript.restore(app.session.get_messages())  # a reopened session draws them the same way
        await until(pilot, lambda: "[INFO] all good" in screen_text(app) and "nothing drawn here" in screen_text(app))


FAILED_ENTRY = "[broken-card] renderer failed: entry renderer broke on purpose"


async def test_a_typescript_entry_renderer_draws_the_entries_it_appends(make_app, tmp_path: Path):  # noqa: F811
    from pi_coding_agent.coding.modes.interactive import history

    extension = tmp_path / "renderer.ts"
    extension.write_text(EXTENSION)
    app = await make_app(extensions=[str(extension)])
    async with app.run_test(size=SIZE) as pilot:
        await _run(pilot, "/card Indexed files")
        await until(pilot, lambda: "Indexed files: 17 expanded=false" in screen_text(app))
        await pilot.press("ctrl+o")  # drawn again by the sidecar, expanded
        await until(pilot, lambda: "Indexed files: 17 expanded=true" in screen_text(app))
        await pilot.press("ctrl+o")
        await until(pilot, lambda: "Indexed files: 17 expanded=false" in screen_text(app))
        assert screen_text(app).splitlines()[2].startswith(" Indexed files: 17")  # the whole row: the Box's padding only
        assert _styles_of(app, "Indexed files")[0].color.triplet.hex == DARK["accent"]
        await _run(pilot, "/hidden secret-entry")
        await _run(pilot, "/brokencard failing-entry")
        await until(pilot, lambda: FAILED_ENTRY in screen_text(app))
        assert "secret-entry" not in screen_text(app) and "failing-entry" not in screen_text(app)
        await app.transcript.restore(history.items(app.session))  # a reopened session draws them the same way
        await until(pilot, lambda: "Indexed files: 17" in screen_text(app) and FAILED_ENTRY in screen_text(app))
        assert flat_text(app).count("entry renderer broke on purpose") == 1  # the row only: no error reported
        assert "secret-entry" not in screen_text(app) and "failing-entry" not in screen_text(app)


def _pane_rows(kind: str, tmp_path: Path, line: str, shown: str) -> list[str]:
    """The screen's rows once ``line``, typed into ours or pi 1.6.0 in a real terminal, showed ``shown``."""
    (tmp_path / "renderer.ts").write_text(EXTENSION)
    (tmp_path / "work").mkdir()
    command, env = pi_command(kind, ["-e", str(tmp_path / "renderer.ts"), "--no-session"], _env(tmp_path / "home"))
    env = {k: v for k, v in env.items() if k not in ("COLUMNS", "LINES")} | {"TERM": "xterm-256color",
                                                                           "PI_OFFLINE": "1"}
    pane = Tmux(f"{shlex.join(command)}; sleep 60", tmp_path / "work", env)
    try:
        pane.wait_for(lambda s: "escape interrupt" in s)
        pane.keys(line)
        pane.wait_for(lambda s: line in s)
        pane.keys("Enter")
        return pane.wait_for(lambda s: shown in s).splitlines()
    finally:
        pane.kill()


needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


@needs_tmux
@pytest.mark.parametrize("kind", ["ours", pytest.param("reference", marks=needs_reference)])
def test_the_drawn_rows_are_pi_s(kind: str, tmp_path: Path) -> None:
    """The same extension in a real terminal, ours and pi 1.6.0: the message is the same rows."""
    rows = _pane_rows(kind, tmp_path, "/status all good now", "expanded=false")
    first = next(i for i, row in enumerate(rows) if "[INFO]" in row)
    assert [row.rstrip() for row in rows[first - 1:first + 3]] == ["", " [INFO] all good now", "",
                                                                   " expanded=false ctrl+o to expand"]


@needs_tmux
@pytest.mark.parametrize("kind", ["ours", pytest.param("reference", marks=needs_reference)])
def test_an_entry_s_drawn_rows_are_pi_s(kind: str, tmp_path: Path) -> None:
    """An appended entry in a real terminal, ours and pi 1.6.0: the same rows, across the whole width
    (the renderer's Box pads it, not the transcript), under one blank row."""
    rows = _pane_rows(kind, tmp_path, "/card Indexed files", "Indexed files: 17")
    first = next(i for i, row in enumerate(rows) if "Indexed files: 17" in row)
    assert [row.rstrip() for row in rows[first - 1:first + 2]] == ["", " Indexed files: 17 expanded=false", ""]


@needs_tmux
@pytest.mark.parametrize("kind", ["ours", pytest.param("reference", marks=needs_reference)])
def test_a_failed_entry_renderer_s_rows_are_pi_s(kind: str, tmp_path: Path) -> None:
    """An entry renderer that throws, ours and pi 1.6.0: the error in its place, padded one row above
    and below, under one blank row."""
    rows = _pane_rows(kind, tmp_path, "/brokencard failing-entry", FAILED_ENTRY)
    first = next(i for i, row in enumerate(rows) if FAILED_ENTRY in row)
    assert [row.rstrip() for row in rows[first - 2:first + 2]] == ["", "", f" {FAILED_ENTRY}", ""]
