"""The system clipboard: ``/copy`` (Ctrl+X) writes the last answer to it, Ctrl+V reads it.

Copying follows pi 1.6.0: the platform's command first (``pbcopy`` on macOS, ``clip`` on Windows;
elsewhere ``termux-clipboard-set`` under Termux, ``wl-copy`` with a Wayland display, ``xclip`` then
``xsel`` with an X11 one), fed the text on stdin. On WSL when none of them worked, Windows Terminal
(``WT_SESSION``) gets OSC 52, else PowerShell's ``Set-Clipboard`` reads the text from a temporary file
(piped bytes would be decoded with the console code page). OSC 52 (the terminal's own clipboard) is
written too in a remote session (``SSH_CONNECTION``, ``SSH_CLIENT``, ``MOSH_CONNECTION`` or
``PI_CLIPBOARD_OSC52=1``), and when nothing else worked on a Linux without a display; it cannot be
checked, so a desktop whose command failed reports the failure instead. Its text is at most 100,000
base64 characters.

Ctrl+V (``app.clipboard.pasteImage``): an image on the clipboard becomes a file path in the prompt.

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
import sys
import tempfile
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from pi_coding_agent.coding.modes.interactive.command_host import PiApp

EXTENSIONS = {"image/png": "png", "image/jpeg": "jpg", "image/webp": "webp", "image/gif": "gif"}  # preferred first
LIST_TIMEOUT_S = 1.0
READ_TIMEOUT_S = 3.0
WRITE_TIMEOUT_S = 5.0
MAX_OSC52_ENCODED = 100_000


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


# ----------------------------------------------------------------------------- copy


def _feed(argv: list[str], text: str | None = None, timeout: float = WRITE_TIMEOUT_S) -> bool:
    """Whether the command took ``text`` on stdin and succeeded. It runs from ``/`` in its own session
    without output pipes: clipboard owners (``xclip``, ``wl-copy``) stay behind as daemons."""
    try:
        done = subprocess.run(argv, input=None if text is None else text.encode(), stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, cwd="/", start_new_session=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def copy_commands(env: Mapping[str, str], system: str) -> list[list[str]]:
    """The commands that write the clipboard here, tried in order."""
    if system == "darwin":
        return [["pbcopy"]]
    if system == "win32":
        return [["clip"]]
    commands: list[list[str]] = []
    if env.get("TERMUX_VERSION"):
        commands.append(["termux-clipboard-set"])
    if env.get("WAYLAND_DISPLAY"):
        commands.append(["wl-copy"])
    if env.get("DISPLAY"):
        commands += [["xclip", "-selection", "clipboard"], ["xsel", "--clipboard", "--input"]]
    return commands


def is_wsl(env: Mapping[str, str]) -> bool:
    if env.get("WSL_DISTRO_NAME") or env.get("WSLENV"):
        return True
    try:
        release = Path("/proc/version").read_text()
    except OSError:
        return False
    return "microsoft" in release.lower() or "wsl" in release.lower()


def _copy_via_powershell(text: str) -> bool:
    """WSL's Windows clipboard through ``powershell.exe``, the text read from a UTF-8 file."""
    fd, name = tempfile.mkstemp(prefix="pi-wsl-clip-", suffix=".txt")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(text)
        windows_path = _run(["wslpath", "-w", name], LIST_TIMEOUT_S)
        if not windows_path or not windows_path.strip():
            return False
        quoted = windows_path.decode().strip().replace("'", "''")
        script = f"Set-Clipboard -Value ([System.IO.File]::ReadAllText('{quoted}', [System.Text.Encoding]::UTF8))"
        return _feed(["powershell.exe", "-NoProfile", "-Command", script])
    finally:
        with contextlib.suppress(OSError):
            os.unlink(name)


def _native_copy(text: str, env: Mapping[str, str], system: str, wsl_terminal: bool) -> bool:
    """The clipboard written by a command (in a worker thread); ``wsl_terminal``: Windows Terminal on
    WSL, whose OSC 52 the caller prefers to PowerShell."""
    if any(_feed(argv, text) for argv in copy_commands(env, system)):
        return True
    return system == "linux" and not wsl_terminal and is_wsl(env) and _copy_via_powershell(text)


def _unavailable(env: Mapping[str, str], system: str) -> str:
    """Why nothing could be copied, with what to install."""
    if env.get("TERMUX_VERSION"):
        return "Clipboard unavailable: install the Termux:API app and `termux-api` package"
    if system == "linux" and env.get("WAYLAND_DISPLAY"):
        return "Clipboard unavailable: install `wl-clipboard` (`wl-copy`) or check Wayland access"
    if system == "linux" and env.get("DISPLAY"):
        return "Clipboard unavailable: install `xclip` or `xsel`, or check X11 access"
    return "Clipboard unavailable"


async def copy_text(text: str, env: Mapping[str, str], system: str, osc52: Callable[[str], None]) -> None:
    """``text`` on the clipboard (module docstring); ``osc52`` writes the terminal's escape sequence.
    Raises ``OSError`` saying what is missing when no route took it."""
    fits = len(text.encode()) <= MAX_OSC52_ENCODED // 4 * 3  # base64 makes 4 characters of 3 bytes
    wsl_terminal = system == "linux" and bool(env.get("WT_SESSION")) and is_wsl(env)
    copied = await asyncio.to_thread(_native_copy, text, env, system, wsl_terminal)
    emitted = False
    if not copied and wsl_terminal and fits:
        osc52(text)
        copied = emitted = True
    if not copied and wsl_terminal:
        copied = await asyncio.to_thread(_copy_via_powershell, text)
    remote = any(env.get(name) for name in ("SSH_CONNECTION", "SSH_CLIENT", "MOSH_CONNECTION")) or \
        env.get("PI_CLIPBOARD_OSC52") == "1"
    headless = system == "linux" and not any(env.get(name) for name in ("DISPLAY", "WAYLAND_DISPLAY", "TERMUX_VERSION"))
    if not emitted and (remote or (not copied and headless)):
        if fits:
            osc52(text)
            copied = True
        elif not copied:
            raise OSError("Clipboard unavailable: text exceeds the OSC 52 size limit")
    if not copied:
        raise OSError(_unavailable(env, system))


async def copy(app: PiApp, text: str) -> None:
    """``/copy``: ``text`` to the clipboard, or the reason it could not go there."""
    try:
        await copy_text(text, dict(os.environ), sys.platform, app.copy_to_clipboard)
    except OSError as err:
        app.show_notice(f"Error: {err}", "error")
        return
    app.show_notice("Copied last agent message to clipboard")
