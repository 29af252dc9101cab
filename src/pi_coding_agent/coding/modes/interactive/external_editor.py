"""Ctrl+G (``app.editor.external``): the prompt in the user's own editor, as pi 1.6.0 does it.

The editor is the ``externalEditor`` setting, else ``$VISUAL``, ``$EDITOR``, else ``nano``; it gets
the prompt (paste markers expanded) in a temporary ``prompt.md`` while the terminal UI is suspended,
and what it saved (one final newline dropped) replaces the prompt. A failed launch or a non-zero exit
leaves the prompt as it was and says why.

The editor runs in a worker thread so the event loop, and with it a streaming answer, keeps going:
the transcript takes every event as usual, only painting waits (``PiApp.lend_terminal``) while the
terminal belongs to the editor, and the screen is drawn whole on return.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pi_coding_agent.coding.modes.interactive.command_host import PiApp
    from pi_coding_agent.coding.resources.settings import Settings


def editor_command(settings: Settings) -> str:
    return settings.external_editor or os.environ.get("VISUAL") or os.environ.get("EDITOR") or "nano"


def edit(command: str, content: str) -> tuple[str | None, str]:
    """Run ``command`` on a file holding ``content``: (the saved text, "") or (None, why it failed)."""
    directory = Path(tempfile.mkdtemp(prefix="pi-editor-"))
    path = directory / "prompt.md"
    try:
        path.write_text(content, encoding="utf-8")
        program, *args = command.split(" ")
        print(f"Launching external editor: {command}\nPi will resume when the editor exits.", flush=True)
        try:
            status = subprocess.run([program, *args, str(path)], check=False).returncode
        except OSError:
            return None, f"Failed to launch external editor: {command}"
        if status != 0:
            how = f"code {status}" if status > 0 else f"signal {-status}"
            return None, f"External editor exited with {how}; prompt unchanged"
        text = path.read_text(encoding="utf-8").removeprefix("\ufeff")
        return text.removesuffix("\n"), ""
    finally:
        shutil.rmtree(directory, ignore_errors=True)


async def open_external_editor(app: PiApp) -> None:
    """Lend the terminal (a headless app has none to give away: the editor just runs), edit, take it back."""
    from textual.app import SuspendNotSupported

    command = editor_command(app.session.rt.settings)
    content = app.editor.expanded_text()
    try:
        with app.lend_terminal():
            text, failure = await asyncio.to_thread(edit, command, content)
    except SuspendNotSupported:
        text, failure = await asyncio.to_thread(edit, command, content)
    if text is None:
        app.show_notice(failure, "warning")
        return
    app.set_editor_text(text)
