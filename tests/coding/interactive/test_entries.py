"""Transcript entries rendered as they stream (``entries.py``), against the same text rendered at once."""

from __future__ import annotations

import random

from rich.console import Console
from rich.style import Style

from pi_coding_agent.coding.modes.interactive.entries import Canvas, TextPart

THINKING = ("First I read the file.\n\nThen   I compare the two functions, which takes a long line that has "
            "to wrap at least once on a narrow canvas.\n  indented step\n\n\nlast thought  \n")


def _canvas(width: int = 40) -> Canvas:
    return Canvas(Console(width=width, color_system="truecolor"), width, Style(bgcolor="#101010"))


def _streamed(text: str, canvas: Canvas, seed: int) -> TextPart:
    """A thinking block fed ``text`` in random pieces, rendered after each one (a frame per delta)."""
    part, rng, at = TextPart({"thinkingText": "#aaaaaa"}, thinking=True), random.Random(seed), 0
    while at < len(text):
        step = rng.randint(1, 12)
        part.text += text[at:at + step]
        at += step
        part.render(canvas)
        assert part.lines == _at_once(part.text, canvas), f"differs after {part.text!r}"
    return part


def _at_once(text: str, canvas: Canvas) -> list[object]:
    part = TextPart({"thinkingText": "#aaaaaa"}, thinking=True)
    part.text = text
    part.render(canvas)
    return list(part.lines)


def test_a_streamed_thinking_block_looks_as_the_whole_text_rendered_at_once():
    for seed in range(20):
        _streamed(THINKING, _canvas(), seed)


def test_a_thinking_delta_keeps_the_lines_before_the_last_newline():
    """Earlier lines are kept, not rendered again: the transcript repaints only lines that are new objects."""
    canvas = _canvas()
    part = _streamed(THINKING + "and a final line", canvas, seed=1)
    before = list(part.lines)
    part.text += " that goes on"
    part.render(canvas)
    assert all(old is new for old, new in zip(before[:-1], part.lines, strict=False))
    assert part.lines[-1] is not before[-1]
