"""Themes outside a terminal UI: ``themePaths`` from ``resources_discover`` (a theme folder, a valid
file, a broken file, a missing path, a non-JSON file) and ``ctx.ui``'s theme calls. pi 1.6.0 loads
and validates the paths but nothing shows the outcome in RPC or print mode: no diagnostic on stderr
or stdout, no change to ``get_commands``, and ``get_all_themes``/``get_theme``/``set_theme`` answer
the same as without themes. The same extension in Python (ours) and TypeScript (reference)."""

from __future__ import annotations

import asyncio
import json
import os
import textwrap
from pathlib import Path

import pytest

from tests.reference.test_extensions_parity import PY_PRELUDE, Parity, assert_parity, play_side
from tests.support.reference_pi import REFERENCE_NODE_BIN, REFERENCE_PI
from tests.support.rpc_compare import Conversation, Record, Workspace, needs_reference, only
from tests.support.rpc_helpers import PYTHON

pytestmark = pytest.mark.timeout(120)


def _theme_files(root: Path) -> list[str]:
    themes = root / "themes"
    themes.mkdir(parents=True, exist_ok=True)
    (themes / "ok.json").write_text(json.dumps({"name": "ok-theme", "colors": {}}))
    (themes / "broken.json").write_text("{not json")
    (root / "notes.txt").write_text("not a theme")
    return [str(themes), str(themes / "ok.json"), str(root / "missing"), str(root / "notes.txt")]


def _extension(paths: list[str], out: Path | None = None) -> Parity:
    """Offers ``paths`` as themes; ``/themes`` reports the theme calls' answers with ``notify``, or
    into the file ``out`` (print mode, where a notice is seen by nobody)."""
    ts_report = "ctx.ui.notify(text, 'info')" if out is None else \
        f"(await import('node:fs')).writeFileSync({json.dumps(str(out))}, text)"
    py_report = "ctx.ui.notify(text, 'info')" if out is None else f"open({json.dumps(str(out))}, 'w').write(text)"
    ts = f"""
    export default function (pi) {{
      pi.on("resources_discover", () => ({{ themePaths: {json.dumps(paths)} }}));
      pi.registerCommand("themes", {{
        description: "Theme calls",
        handler: async (_args, ctx) => {{
          const one = ctx.ui.getTheme("ok-theme");
          const text = JSON.stringify({{ all: ctx.ui.getAllThemes(), one: one === undefined ? "undefined" : "found",
                                        set: ctx.ui.setTheme("ok-theme") }});
          {ts_report};
        }},
      }});
    }}
    """
    py = f"""
    def setup(pi):
        pi.on("resources_discover", lambda event, ctx: {{"themePaths": {json.dumps(paths)}}})

        async def themes(args, ctx):
            one = ctx.ui.get_theme("ok-theme")
            text = stringify({{"all": ctx.ui.get_all_themes(), "one": "undefined" if one is None else "found",
                              "set": ctx.ui.set_theme("ok-theme")}})
            {py_report}

        pi.register_command("themes", description="Theme calls", handler=themes)
    """
    return Parity(ts=ts, py=py, drive=_drive, check=_check)


async def _drive(conv: Conversation) -> None:
    await conv.request({"type": "get_state"})  # session_start and resources_discover have run by now
    await conv.request({"type": "get_commands"})
    await conv.send({"type": "prompt", "message": "/themes"})
    seen: set[str] = set()

    def both(record: Record) -> bool:  # the prompt's response and the command's notice, in either order
        seen.add("note" if record["type"] == "extension_ui_request" else record.get("command", ""))
        return {"note", "prompt"} <= seen

    await conv.read_until(both)


def _check(records: list[Record], requests: list[dict[str, object]]) -> None:
    commands = next(r for r in records if r.get("command") == "get_commands")["data"]["commands"]
    assert [c["name"] for c in commands if c["source"] == "extension" and
            not c["sourceInfo"]["path"].startswith("builtin:")] == ["themes"]
    note = next(r for r in only(records, "extension_ui_request") if r["method"] == "notify")
    assert json.loads(note["message"]) == {
        "all": [], "one": "undefined", "set": {"success": False, "error": "Theme switching not supported in RPC mode"}}
    assert requests == []  # the command never reached the model


@pytest.mark.slow
async def test_themes_change_nothing_in_rpc_mode(tmp_path: Path) -> None:
    parity = _extension(_theme_files(tmp_path / "files"))
    ours = await play_side("ours", parity, tmp_path)
    parity.check(ours.records, ours.requests)


@needs_reference
async def test_themes_match_reference_in_rpc_mode(tmp_path: Path) -> None:
    parity = _extension(_theme_files(tmp_path / "files"))
    ours = await assert_parity(parity, tmp_path)
    parity.check(ours.records, ours.requests)


async def _print_mode(kind: str, root: Path, paths: list[str]) -> tuple[str, dict[str, object]]:
    """``pi -p /themes`` with the extension: its stderr and what ``/themes`` wrote (stdout stays empty)."""
    ws = Workspace.create(root / kind, "http://127.0.0.1:9")
    parity = _extension(paths, ws.root / "themes.json")
    source, suffix = ((textwrap.dedent(parity.py) + PY_PRELUDE, ".py") if kind == "ours"
                      else (textwrap.dedent(parity.ts), ".ts"))
    ext = ws.root / f"ext{suffix}"
    ext.write_text(source)
    argv = [PYTHON, "-m", "pi_coding_agent"] if kind == "ours" else [str(REFERENCE_PI)]
    env = {**ws.env, "PATH": f"{REFERENCE_NODE_BIN}:{os.environ.get('PATH', '')}"}
    run = await asyncio.create_subprocess_exec(*argv, "--no-session", "-e", str(ext), "-p", "/themes", cwd=ws.cwd,
                                               env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    stdout, stderr = await asyncio.wait_for(run.communicate(), 60)
    assert run.returncode == 0, stderr.decode()
    assert stdout == b""
    return stderr.decode(), json.loads((ws.root / "themes.json").read_text())


@pytest.mark.slow
async def test_themes_change_nothing_in_print_mode(tmp_path: Path) -> None:
    stderr, seen = await _print_mode("ours", tmp_path, _theme_files(tmp_path / "files"))
    assert seen == {"all": [], "one": "undefined", "set": {"success": False, "error": "UI not available"}}
    assert "theme" not in stderr.lower()


@needs_reference
async def test_themes_match_reference_in_print_mode(tmp_path: Path) -> None:
    paths = _theme_files(tmp_path / "files")
    ours = await _print_mode("ours", tmp_path, paths)
    reference = await _print_mode("reference", tmp_path, paths)
    assert ours[1] == reference[1]
    assert "theme" not in ours[0].lower() and "theme" not in reference[0].lower()
