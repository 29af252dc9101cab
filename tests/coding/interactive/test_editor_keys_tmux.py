"""The real ``pi`` in tmux: keys written to the terminal in one burst apply in the order they came."""

from __future__ import annotations

import json

from tests.coding.interactive.test_interactive_tmux import pytestmark, terminal  # noqa: F401


def test_a_burst_with_ctrl_u_applies_in_order(terminal, fake_llm):  # noqa: F811
    pane = terminal()
    pane.wait_for(lambda s: "escape interrupt" in s)
    pane.keys("abc")
    pane.wait_for(lambda s: "abc" in s)
    pane.keys("C-u", "hello", "Enter")  # one send-keys: one write, read by pi at once
    pane.wait_for(lambda s: "ok" in s and fake_llm.requests)
    sent = json.dumps(fake_llm.requests[-1]["body"]["messages"])
    assert "hello" in sent and "abchello" not in sent
