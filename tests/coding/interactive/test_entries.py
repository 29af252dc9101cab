"""Transcript entries rendered piecewise (``entries``): a streamed thinking block renders its finished
lines once and a redraw renders only its last line, with the same lines as rendering it whole."""

from __future__ import annotations

import random
from typing import Any

from rich.console import Console
from rich.style import Style
from rich.text import Text

from pi_coding_agent.coding.modes.interactive.entries import Canvas, TextPart
from pi_coding_agent.coding.modes.interactive.theme import DARK


class CountingCanvas(Canvas):
    """A canvas that records the texts it was asked to render."""

    rendered: list[str]

    def strips(self, renderable: Any, background: str | None = None) -> Any:
        self.rendered.append(str(renderable))
        return super().strips(renderable, background)


def canvas(width: int = 30) -> CountingCanvas:
    drawn = CountingCanvas(Console(width=width, color_system="truecolor"), width, Style())
    object.__setattr__(drawn, "rendered", [])
    return drawn


def rows(part: TextPart) -> list[str]:
    return [strip.text for strip in part.lines]


def whole(text: str, width: int) -> list[str]:
    """The rows of the thinking text rendered as one ``Text``."""
    return [strip.text for strip in canvas(width).strips(Text(text.strip(), style="italic"))]


def test_a_streamed_thinking_block_renders_its_finished_lines_once():
    part, drawn = TextPart(DARK, thinking=True), canvas()
    part.text = "\n first paragraph, long enough to wrap on two rows\n\nsecond"
    part.render(drawn)
    part.text += " paragraph grows"
    drawn.rendered.clear()
    part.render(drawn)
    assert drawn.rendered == ["second paragraph grows"]  # not the paragraphs above it
    assert rows(part) == whole(part.text, 30)


def test_piecewise_thinking_lines_equal_the_whole_text_rendered_at_once():
    chooser = random.Random(7)
    words = ["alpha", "beta", "gamma-delta-epsilon", "\n", "\n\n", " ", "  ", "x" * 40, "end.\n"]
    for _ in range(40):
        text = "".join(chooser.choice(words) + chooser.choice(" \n") for _ in range(30))
        part, drawn = TextPart(DARK, thinking=True), canvas(24)
        at = 0
        while at < len(text):  # streamed in deltas of random sizes, a redraw after each
            at += chooser.randint(1, 12)
            part.text = text[:at]
            part.render(drawn)
            assert rows(part) == whole(part.text, 24), repr(part.text)


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


def test_a_thinking_delta_keeps_the_lines_before_the_last_newline():
    """Earlier lines are kept, not rendered again: the transcript repaints only lines that are new objects."""
    canvas = _canvas()
    part = _streamed(THINKING + "and a final line", canvas, seed=1)
    before = list(part.lines)
    part.text += " that goes on"
    part.render(canvas)
    assert all(old is new for old, new in zip(before[:-1], part.lines, strict=False))
    assert part.lines[-1] is not before[-1]
