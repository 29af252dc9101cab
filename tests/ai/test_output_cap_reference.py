"""The output-token cap of each request near a full context window, side by side with the reference.

pi estimates the tokens in use as the last reported usage plus estimates of the messages after it;
the system prompt and tool declarations count only while no usage has been reported (they sit
before the first response). Small windows (llama.cpp's 8k) make any surplus in the estimate eat the
whole answer, so the caps sent must be pi's to the token.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.coding.rpc.test_rpc_compaction import LONG, SUMMARY, TOO_LONG, reply, user_text
from tests.support.rpc_compare import Conversation, Scenario, needs_reference, play

NO_COMPACTION = {"compaction": {"enabled": False}}


def _prompts(*texts: str) -> Any:
    async def drive(conv: Conversation) -> None:
        for text in texts:
            await conv.prompt(text)
    return drive


SCENARIOS: dict[str, Scenario] = {
    "small_window": Scenario([reply("ok", 2480, 20)] * 3, _prompts("hi", "a short question", "x" * 4000),
                             NO_COMPACTION, context_window=8000, max_tokens=2048),
    "large_window": Scenario([reply("ok", 114980, 20)] * 2, _prompts("hi", "and now?"),
                             NO_COMPACTION, context_window=128000, max_tokens=16384),
    "overflow_compaction": Scenario(
        [reply(LONG + "one", 1500), reply(LONG + "two", 2600), TOO_LONG, reply(SUMMARY, 300, 20),
         reply("recovered", 500, 5)], _prompts(*(user_text(n) * 6 for n in (1, 2, 3))),
        {"retry": {"baseDelayMs": 50}, "compaction": {"keepRecentTokens": 100, "reserveTokens": 1000}},
        context_window=8000, max_tokens=2048),
}


def _caps(requests: list[dict[str, Any]]) -> list[int]:
    """Caps of the agent requests after the first: the first one's estimate holds the system prompt,
    worded by each implementation, and summary requests are framed in each one's words too."""
    return [r["body"]["max_completion_tokens"] for r in requests if r["body"].get("tools")][1:]


@needs_reference
async def test_output_caps_match_the_reference(tmp_path: Path) -> None:
    for name, scenario in SCENARIOS.items():
        ours = await play("ours", scenario, tmp_path / name)
        reference = await play("reference", scenario, tmp_path / name)
        assert _caps(ours.requests) == _caps(reference.requests), name
