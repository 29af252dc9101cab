"""Ctrl+V (``app.clipboard.pasteImage``): an image on the clipboard becomes a file path in the prompt.

As in pi 1.6.0 on Linux, the image is read with ``wl-paste`` (Wayland) or ``xclip`` (X11), saved as
``<tmp>/pi-clipboard-<uuid>.<ext>`` and its path inserted at the cursor: the model opens it with the
``read`` tool like any image path typed or dropped into the prompt. Without an image the clipboard's
text is inserted (``wl-paste``, ``xclip`` or ``xsel``). Terminal paste (bracketed paste) does not come
here: it is the editor's own.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import tempfile
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pi_coding_agent.coding.modes.interactive.command_host import PiApp

EXTENSIONS = {"image/png": "png", "image/jpeg": "jpg", "image/webp": "webp", "image/gif": "gif"}  # preferred first
LIST_TIMEOUT_S = 1.0
READ_TIMEOUT_S = 3.0


def _run(argv: list[str], timeout: float = READ_TIMEOUT_S) -> bytes | None:
    """The command's output; None when it is missing, fails or hangs."""
    try:
        done = subprocess.run(argv, capture_output=True, timeout=timeout, check=False, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def _preferred(listing: bytes) -> str | None:
    types = {line.strip().split(";")[0].lower(): line.strip() for line in listing.decode(errors="replace").splitlines()}
    return next((types[kind] for kind in EXTENSIONS if kind in types), None)


def _image_via(list_argv: list[str], read_argv: list[str]) -> tuple[bytes, str] | None:
    """(bytes, mime type), None when the clipboard holds no image; ``LookupError`` when the tool is unavailable."""
    listing = _run(list_argv, LIST_TIMEOUT_S)
    if listing is None:
        raise LookupError(list_argv[0])
    kind = _preferred(listing)
    if kind is None:
        return None
    data = _run([*read_argv, kind])
    return (data, kind.split(";")[0].lower()) if data else None


def read_image(env: Mapping[str, str]) -> tuple[bytes, str] | None:
    """The clipboard's image, Wayland first (an empty Wayland clipboard is not read again through X11)."""
    if env.get("WAYLAND_DISPLAY") or env.get("XDG_SESSION_TYPE") == "wayland":
        with contextlib.suppress(LookupError):
            return _image_via(["wl-paste", "--list-types"], ["wl-paste", "--no-newline", "--type"])
    try:
        return _image_via(["xclip", "-selection", "clipboard", "-t", "TARGETS", "-o"],
                          ["xclip", "-selection", "clipboard", "-o", "-t"])
    except LookupError:
        return None


def read_text(env: Mapping[str, str]) -> str | None:
    commands: list[list[str]] = []
    if env.get("WAYLAND_DISPLAY"):
        commands.append(["wl-paste", "--no-newline", "--type", "text"])
    if env.get("DISPLAY"):
        commands += [["xclip", "-selection", "clipboard", "-out"], ["xsel", "--clipboard", "--output"]]
    for argv in commands:
        data = _run(argv)
        if data is not None:
            return data.decode(errors="replace") or None
    return None


def paste_from_clipboard(env: Mapping[str, str]) -> str | None:
    """What Ctrl+V inserts: a saved image's path, else the clipboard's text (None: nothing)."""
    image = read_image(env)
    if image is None:
        return read_text(env)
    data, kind = image
    path = Path(tempfile.gettempdir()) / f"pi-clipboard-{uuid.uuid4()}.{EXTENSIONS[kind]}"
    path.write_bytes(data)
    return str(path)


async def paste(app: PiApp) -> None:
    try:
        text = await asyncio.to_thread(paste_from_clipboard, dict(os.environ))
    except OSError as err:
        app.show_notice(f"Error: Failed to paste from clipboard: {err}", "error")
        return
    if text:
        app.editor.insert(text)
