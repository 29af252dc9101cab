"""pi's editor keys side by side: the reference pi and ours in tmux, the same text and keys typed into
each editor, the same line left (``|`` typed last marks where the cursor ended)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from tests.coding.interactive.test_interactive_tmux import Tmux, pytestmark
from tests.support.reference_pi import REFERENCE_PI, reference_path
from tests.support.rpc_helpers import PYTHON

pytestmark = [pytestmark, pytest.mark.reference]

CASES = [  # (text typed, tmux keys pressed after it)
    ("foo.bar baz", ["M-b", "M-b"]),
    ("one two  ", ["C-w"]),
    ("one two", ["C-a", "M-d"]),
    ("a-b-c", ["C-a", "C-]", "-", "C-]", "-"]),
    ("one two", ["C-w", "C-w", "C-y"]),
    ("first second", ["C-w", "x", "C-w", "C-y", "M-y"]),
    ("abc", ["C-a", "C-d"]),
    ("hello world", ["C-b", "C-b", "C-f"]),
    ("foo bar", ["C-a", "M-f", "C-k", "C-a", "C-y"]),
    ("one two", ["Space", "t", "w", "o", "C-w", "C-_", "C-_"]),
    ("one two", ["C-b", "Up"]),  # the top row, not at column 0: the line start
]


def _editor_lines(command: str, tmp_path: Path) -> list[str]:
    tmp_path.mkdir(exist_ok=True)
    agent = tmp_path / "agent"
    agent.mkdir(exist_ok=True)
    (agent / "models.json").write_text(json.dumps({"providers": {"local": {
        "baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions", "apiKey": "dummy",
        "models": [{"id": "m1", "contextWindow": 100_000, "maxTokens": 1000}]}}}))
    env = {**{k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}, "HOME": str(tmp_path),
           "PI_CODING_AGENT_DIR": str(agent), "TERM": "xterm-256color",
           "PATH": reference_path(os.environ.get("PATH", ""))}
    pane = Tmux(f"{command} --provider local --model m1 --no-session", tmp_path, env)
    try:
        pane.wait_for(lambda s: "m1" in s)
        time.sleep(1)
        lines = []
        for text, keys in CASES:
            pane._tmux("send-keys", "-t", "t", "-l", text)
            pane.keys(*keys)
            pane._tmux("send-keys", "-t", "t", "-l", "|")
            screen = pane.wait_for(lambda s: any("|" in line for line in s.splitlines()))
            lines.append(next(line for line in screen.splitlines() if "|" in line).strip())
            pane.keys("C-e", "C-u")  # clears the line in both (the kill ring keeps it, in both)
            pane.wait_for(lambda s: not any("|" in line for line in s.splitlines()))
        return lines
    finally:
        pane.kill()


def test_editor_keys_leave_the_line_the_reference_leaves(tmp_path):
    ours = _editor_lines(f"{PYTHON} -m pi_coding_agent", tmp_path / "ours")
    reference = _editor_lines(str(REFERENCE_PI), tmp_path / "reference")
    assert ours == reference
