"""``/copy``: the platform's clipboard command, chosen by platform and display, fed the exact text
(fake commands on PATH, real processes), and OSC 52 where pi writes it."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

from pi_coding_agent.coding.modes.interactive.clipboard import copy_text
from tests.coding.interactive.test_interactive import SIZE, make_app, type_text, until  # noqa: F401
from tests.coding.interactive.test_interactive_commands import flat_text

TEXT = "the answer: héllo ✓\n  second line\n"
COMMANDS = ("pbcopy", "clip", "wl-copy", "xclip", "xsel", "termux-clipboard-set", "wslpath", "powershell.exe")


class FakeCommands:
    """Clipboard commands on PATH (and nothing else of them): each saves its stdin and arguments
    under ``out``; ``failing`` ones exit 1."""

    def __init__(self, tmp_path: Path, monkeypatch: Any) -> None:
        self.bin = tmp_path / "bin"
        self.out = tmp_path / "out"
        self.bin.mkdir()
        self.out.mkdir()
        for name in COMMANDS:  # earlier PATH entries must not answer for a command a test leaves out
            self._script(name, "exit 127")
        monkeypatch.setenv("PATH", f"{self.bin}:{os.environ['PATH']}")

    def _script(self, name: str, body: str) -> None:
        script = self.bin / name
        script.write_text(f"#!/bin/sh\n{body}\n")
        script.chmod(0o755)

    def add(self, name: str, failing: bool = False) -> None:
        self._script(name, f'printf "%s\\n" "$*" > {self.out}/{name}.args\ncat > {self.out}/{name}.in\n'
                           f"exit {1 if failing else 0}")

    def piped(self, name: str) -> str | None:
        path = self.out / f"{name}.in"
        return path.read_text(encoding="utf-8") if path.exists() else None

    def args(self, name: str) -> str:
        return (self.out / f"{name}.args").read_text().strip()


@pytest.fixture
def commands(tmp_path, monkeypatch) -> FakeCommands:
    return FakeCommands(tmp_path, monkeypatch)


async def copied(env: dict[str, str], system: str) -> list[str]:
    """The OSC 52 texts written while copying ``TEXT``."""
    sent: list[str] = []
    await copy_text(TEXT, env, system, sent.append)
    return sent


async def test_macos_pipes_the_text_to_pbcopy(commands):
    commands.add("pbcopy")
    assert await copied({}, "darwin") == []
    assert commands.piped("pbcopy") == TEXT


async def test_windows_pipes_the_text_to_clip(commands):
    commands.add("clip")
    assert await copied({}, "win32") == []
    assert commands.piped("clip") == TEXT


async def test_wayland_uses_wl_copy_before_x11(commands):
    commands.add("wl-copy")
    commands.add("xclip")
    assert await copied({"WAYLAND_DISPLAY": "wayland-0", "DISPLAY": ":0"}, "linux") == []
    assert commands.piped("wl-copy") == TEXT
    assert commands.piped("xclip") is None


async def test_x11_falls_back_from_a_failing_xclip_to_xsel(commands):
    commands.add("xclip", failing=True)
    commands.add("xsel")
    assert await copied({"DISPLAY": ":0"}, "linux") == []
    assert commands.args("xclip") == "-selection clipboard"
    assert commands.piped("xsel") == TEXT
    assert commands.args("xsel") == "--clipboard --input"


async def test_termux_uses_termux_clipboard_set(commands):
    commands.add("termux-clipboard-set")
    assert await copied({"TERMUX_VERSION": "0.118"}, "linux") == []
    assert commands.piped("termux-clipboard-set") == TEXT


async def test_an_ssh_session_also_writes_osc52(commands):
    commands.add("xclip")
    assert await copied({"DISPLAY": ":0", "SSH_CONNECTION": "1.2.3.4 5 6.7.8.9 22"}, "linux") == [TEXT]
    assert commands.piped("xclip") == TEXT
    assert await copied({"DISPLAY": ":0", "PI_CLIPBOARD_OSC52": "1"}, "linux") == [TEXT]


async def test_a_linux_without_a_display_copies_through_osc52(commands):
    assert await copied({}, "linux") == [TEXT]


async def test_a_desktop_whose_commands_fail_reports_what_to_install(commands):
    with pytest.raises(OSError, match="install `xclip` or `xsel`"):
        await copied({"DISPLAY": ":0"}, "linux")
    with pytest.raises(OSError, match="install `wl-clipboard`"):
        await copied({"WAYLAND_DISPLAY": "wayland-0"}, "linux")


async def test_osc52_has_a_size_limit(commands):
    with pytest.raises(OSError, match="exceeds the OSC 52 size limit"):
        await copy_text("x" * 75_001, {}, "linux", lambda text: None)
    sent: list[str] = []
    await copy_text("x" * 75_000, {}, "linux", sent.append)  # 100,000 base64 characters
    assert sent == ["x" * 75_000]


async def test_wsl_writes_the_windows_clipboard_through_powershell_from_a_utf8_file(commands):
    commands._script("wslpath", 'printf "%s\\n" "$2"')  # the Linux path stands for the Windows one
    # the fake PowerShell copies the file its script names, as Set-Clipboard would read it
    commands._script("powershell.exe", f"""printf "%s" "$3" > {commands.out}/script
file=$(sed -n "s/.*ReadAllText('\\([^']*\\)'.*/\\1/p" {commands.out}/script)
cp "$file" {commands.out}/powershell.in""")
    assert await copied({"WSL_DISTRO_NAME": "Ubuntu"}, "linux") == []
    assert commands.piped("powershell") == TEXT
    assert (commands.out / "script").read_text().startswith("Set-Clipboard -Value")
    assert not list(Path(tempfile.gettempdir()).glob("pi-wsl-clip-*"))  # the file is gone


async def test_windows_terminal_on_wsl_gets_osc52_instead(commands):
    commands.add("powershell.exe")
    assert await copied({"WSL_DISTRO_NAME": "Ubuntu", "WT_SESSION": "x"}, "linux") == [TEXT]
    assert commands.piped("powershell.exe") is None


@pytest.mark.slow
async def test_copy_command_pipes_the_last_answer(make_app, fake_llm, commands, monkeypatch):  # noqa: F811
    if os.uname().sysname != "Linux":
        pytest.skip("the X11 command is chosen on Linux")
    commands.add("xclip")
    for name in ("WAYLAND_DISPLAY", "SSH_CONNECTION", "SSH_CLIENT", "MOSH_CONNECTION", "PI_CLIPBOARD_OSC52",
                 "TERMUX_VERSION", "WSL_DISTRO_NAME", "WSLENV"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DISPLAY", ":0")
    fake_llm.add({"content": [{"type": "text", "text": "copy **me**"}]})
    app = await make_app()
    async with app.run_test(size=SIZE) as pilot:
        await type_text(pilot, "/copy")
        await pilot.press("enter")
        await until(pilot, lambda: "No agent messages to copy yet." in flat_text(app))
        await type_text(pilot, "hi")
        await pilot.press("enter")
        await until(pilot, lambda: "copy me" in flat_text(app))
        await type_text(pilot, "/copy")
        await pilot.press("enter")
        await until(pilot, lambda: "Copied last agent message to clipboard" in flat_text(app))
    assert commands.piped("xclip") == "copy **me**"
    assert app.clipboard == ""  # no OSC 52 on a desktop
