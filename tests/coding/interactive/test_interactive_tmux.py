"""The real ``pi`` in a real terminal (tmux) against the fake LLM server: it opens, answers, runs a
tool, quits on Ctrl+C twice or SIGTERM, and leaves the terminal as it found it (``stty`` after exit)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.coding.interactive.test_interactive import write_models
from tests.support.rpc_helpers import PYTHON

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


class Tmux:
    """One pane on a private tmux server (its own socket), killed at the end."""

    def __init__(self, command: str, cwd: Path, env: dict[str, str]) -> None:
        self.socket = f"pi-test-{uuid.uuid4().hex[:8]}"
        self.env = env
        self._tmux("new-session", "-d", "-s", "t", "-x", "120", "-y", "40", "-c", str(cwd), command)

    def _tmux(self, *args: str) -> str:
        done = subprocess.run(["tmux", "-L", self.socket, "-f", "/dev/null", *args], capture_output=True,
                              env=self.env, timeout=30, check=False)
        return done.stdout.decode(errors="replace")

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-t", "t")

    def keys(self, *keys: str) -> None:
        self._tmux("send-keys", "-t", "t", *keys)

    def resize(self, width: int, height: int) -> None:
        self._tmux("resize-window", "-t", "t", "-x", str(width), "-y", str(height))

    def paste(self, text: str) -> None:
        """``text`` as the terminal pastes it: bracketed, when the program asked for that."""
        self._tmux("set-buffer", "--", text)
        self._tmux("paste-buffer", "-p", "-t", "t")

    def wait_for(self, predicate: Callable[[str], bool], timeout: float = 60) -> str:
        """The screen once ``predicate`` holds. Looked at again soon, then less often: a key's effect
        shows within tens of milliseconds, a start or an answer takes longer."""
        deadline = time.monotonic() + timeout
        delay = 0.01
        while True:
            text = self.screen()
            if predicate(text):
                return text
            assert time.monotonic() < deadline, f"timed out; the screen:\n{text}"
            time.sleep(delay)
            delay = min(delay * 2, 0.2)

    def pi_pid(self) -> int:
        shell = int(self._tmux("list-panes", "-t", "t", "-F", "#{pane_pid}").strip())
        children = Path(f"/proc/{shell}/task/{shell}/children").read_text().split()
        return int(children[0])

    def kill(self) -> None:
        self._tmux("kill-server")


@pytest.fixture
def terminal(tmp_path, fake_llm) -> Iterator[Callable[..., Tmux]]:
    panes: list[Tmux] = []
    write_models(tmp_path / "agent", fake_llm.url)
    project = tmp_path / "project"
    project.mkdir()

    def start(*pi_args: str) -> Tmux:
        # not COLUMNS/LINES: pytest-xdist's workers set 80x24, and the UI would size itself by them
        # rather than by the 120x40 pane
        env = {**{k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}, "HOME": str(tmp_path),
               "PI_CODING_AGENT_DIR": str(tmp_path / "agent"), "TERM": "xterm-256color"}
        words = " ".join(f"'{a}'" for a in pi_args)
        # after pi: its exit status and the terminal modes it left, then a pause to read them
        command = (f"{PYTHON} -m pi_coding_agent --provider local --model m1 {words}; "
                   "echo EXITED $?; stty -a | tr ' ' '\\n' | grep -E '^-?(icanon|echo)$' | tr '\\n' ' '; sleep 60")
        pane = Tmux(command, project, env)  # tmux runs it with sh -c: pi is the shell's child
        panes.append(pane)
        return pane

    yield start
    for pane in panes:
        pane.kill()


def _sane(screen: str) -> bool:
    return "icanon echo" in screen and "-icanon" not in screen and "-echo " not in screen


@pytest.mark.slow
def test_pi_answers_runs_a_tool_and_quits_with_ctrl_c_twice(terminal, fake_llm, tmp_path):
    fake_llm.add({"content": [{"type": "toolCall", "id": "c1", "name": "bash",
                               "arguments": {"command": "echo from-the-tool"}}]},
                 {"content": [{"type": "text", "text": "The answer is **forty-two**."}]})
    pane = terminal()
    pane.wait_for(lambda s: "escape interrupt" in s and "m1" in s)
    pane.keys("what is it", "Enter")
    screen = pane.wait_for(lambda s: "The answer is forty-two." in s)
    assert "$ echo from-the-tool" in screen and screen.count("from-the-tool") == 2
    pane.keys("C-c")
    time.sleep(0.3)
    pane.keys("C-c")
    screen = pane.wait_for(lambda s: "EXITED" in s and "icanon" in s)
    assert "EXITED 0" in screen and _sane(screen)
    saved = list((tmp_path / "agent" / "sessions").rglob("*.jsonl"))
    assert len(saved) == 1 and "forty-two" in saved[0].read_text()


def test_a_message_argument_is_sent_at_start_and_sigterm_restores_the_terminal(terminal, fake_llm):
    fake_llm.add({"content": [{"type": "text", "text": "hello from the start"}]})
    pane = terminal("say hi")
    pane.wait_for(lambda s: "hello from the start" in s and "say hi" in s)
    os.kill(pane.pi_pid(), signal.SIGTERM)
    screen = pane.wait_for(lambda s: "EXITED" in s and "icanon" in s)
    assert "EXITED 143" in screen and _sane(screen)


@pytest.mark.slow
def test_a_streaming_answer_goes_on_while_the_external_editor_is_open(terminal, fake_llm, tmp_path, monkeypatch):
    """The stand-in editor waits (20 s at most) for the answer's last word to reach the session file
    and reports in the prompt whether it got there while the editor was open."""
    fake_llm.add({"content": [{"type": "text", "text": "word " * 200 + "end-of-answer"}],
                  "chunkSize": 5, "chunkDelayMs": 20})
    sessions = tmp_path / "agent" / "sessions"
    script = tmp_path / "waiting-editor.sh"
    script.write_text("#!/bin/sh\nfor i in $(seq 100); do\n"
                      f"  if grep -rqs end-of-answer {sessions}; then echo streamed > \"$1\"; exit 0; fi\n"
                      "  sleep 0.2\ndone\necho stalled > \"$1\"\n")
    script.chmod(0o755)
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", str(script))
    pane = terminal()
    pane.wait_for(lambda s: "escape interrupt" in s and "m1" in s)
    pane.keys("talk", "Enter")
    pane.wait_for(lambda s: "word word" in s)
    pane.keys("C-g")
    screen = pane.wait_for(lambda s: "streamed" in s or "stalled" in s, timeout=40)
    assert "streamed" in screen
    pane.wait_for(lambda s: "end-of-answer" in s)
