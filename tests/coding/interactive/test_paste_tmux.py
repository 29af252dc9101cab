"""A bracketed paste in a real terminal (tmux), ours and pi 1.6.0 side by side: while an answer
streams, the pasted lines land in the editor whole, once, and nothing of them is a key: no command
runs, no Enter sends them."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from tests.coding.interactive.test_interactive_tmux import Tmux, pytestmark  # noqa: F401
from tests.support.cli_sides import FAKE_MODEL, fake_agent_env, needs_reference, pi_command

# a command, a shell line, a tab, a pasted arrow key's escape sequence, CR line ends (tmux's own)
PASTED = "line one\n/model\n!echo nothing\n\tindented\x1b[A after escape\nlast line"
KEPT = "line one\n/model\n!echo nothing\n    indented[A after escape\nlast line"


def _user_texts(body: dict) -> list[str]:
    texts = []
    for message in body["messages"]:
        if message["role"] == "user":
            content = message["content"]
            texts.append(content if isinstance(content, str) else "".join(p.get("text", "") for p in content))
    return texts


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["ours", pytest.param("reference", marks=needs_reference)])
def test_a_paste_while_an_answer_streams_stays_in_the_editor(kind: str, tmp_path: Path, fake_llm) -> None:
    fake_llm.add({"content": [{"type": "text", "text": "word " * 150 + "end-of-answer"}],
                  "chunkSize": 5, "chunkDelayMs": 20},
                 {"content": [{"type": "text", "text": "the second answer"}]})
    command, env = pi_command(kind, [*FAKE_MODEL, "--no-session"], fake_agent_env(tmp_path / "home", fake_llm.url))
    env = {k: v for k, v in env.items() if k not in ("COLUMNS", "LINES")} | {"TERM": "xterm-256color"}
    (tmp_path / "work").mkdir()
    pane = Tmux(f"{shlex.join(command)}; sleep 60", tmp_path / "work", env)
    try:
        pane.wait_for(lambda s: "escape interrupt" in s)
        pane.keys("talk", "Enter")
        pane.wait_for(lambda s: "word word" in s)
        pane.paste(PASTED)
        screen = pane.wait_for(lambda s: "end-of-answer" in s and "last line" in s)
        assert screen.count("last line") == 1 and "    indented[A after escape" in screen
        assert len(fake_llm.requests) == 1  # nothing was sent while it streamed (a steer)
        pane.keys("Enter")
        pane.wait_for(lambda s: "the second answer" in s)
        assert _user_texts(fake_llm.requests[-1]["body"]) == ["talk", KEPT]
    finally:
        pane.kill()
