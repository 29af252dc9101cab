"""A TypeScript extension's ``registerMessageRenderer`` in the terminal UI: the renderer runs in the
Node.js sidecar with pi-tui's components, and its lines (ANSI styling kept) draw the custom messages
the extension sends; a renderer that returns nothing or throws leaves the default drawing."""

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


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
@pytest.mark.parametrize("kind", ["ours", pytest.param("reference", marks=needs_reference)])
def test_the_drawn_rows_are_pi_s(kind: str, tmp_path: Path) -> None:
    """The same extension in a real terminal, ours and pi 1.6.0: the message is the same rows."""
    (tmp_path / "renderer.ts").write_text(EXTENSION)
    (tmp_path / "work").mkdir()
    command, env = pi_command(kind, ["-e", str(tmp_path / "renderer.ts"), "--no-session"], _env(tmp_path / "home"))
    env = {k: v for k, v in env.items() if k not in ("COLUMNS", "LINES")} | {"TERM": "xterm-256color",
                                                                           "PI_OFFLINE": "1"}
    pane = Tmux(f"{shlex.join(command)}; sleep 60", tmp_path / "work", env)
    try:
        pane.wait_for(lambda s: "escape interrupt" in s)
        pane.keys("/status all good now")
        pane.wait_for(lambda s: "/status all good now" in s)
        pane.keys("Enter")
        rows = pane.wait_for(lambda s: "expanded=false" in s).splitlines()
    finally:
        pane.kill()
    first = next(i for i, row in enumerate(rows) if "[INFO]" in row)
    assert [row.rstrip() for row in rows[first:first + 3]] == [" [INFO] all good now", "",
                                                               " expanded=false ctrl+o to expand"]
