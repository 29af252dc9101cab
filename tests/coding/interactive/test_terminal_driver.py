"""The terminal driver's input on the event loop (``terminal_driver.LoopInput``), over a real pipe."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
from textual import constants, events

from pi_coding_agent.coding.modes.interactive.terminal_driver import LoopInput


@pytest.fixture
def pipe() -> Iterator[tuple[int, int]]:
    read, write = os.pipe()
    yield read, write
    for fd in (read, write):
        with contextlib.suppress(OSError):  # a test closed it
            os.close(fd)


@pytest.fixture
async def typed(pipe: tuple[int, int]) -> AsyncIterator[tuple[int, list[Any]]]:
    """The write end of a pipe that a ``LoopInput`` reads, and the events it handed over so far."""
    read, write = pipe
    received: list[Any] = []
    reader = LoopInput(read, received.append, lambda: received.append("failed"))
    yield write, received
    reader.close()


async def _until(predicate: Callable[[], object], timeout: float = 5.0) -> None:
    """Let the loop run until ``predicate()`` holds (it fails the test on timeout)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        assert loop.time() < deadline, "timed out"
        await asyncio.sleep(0.01)


def _keys(received: list[Any]) -> list[str]:
    return [event.key for event in received if isinstance(event, events.Key)]


async def test_keys_are_read_on_the_loop_as_they_arrive(typed):
    write, received = typed
    os.write(write, b"ab\x1b[A")  # two letters and the up arrow, in one read
    await _until(lambda: len(_keys(received)) == 3)
    assert _keys(received) == ["a", "b", "up"]


async def test_a_lone_escape_is_a_key_once_the_escape_delay_has_passed(typed):
    write, received = typed
    loop = asyncio.get_running_loop()
    sent = loop.time()
    os.write(write, b"\x1b")
    await _until(lambda: _keys(received) == ["escape"])
    assert loop.time() - sent >= constants.ESCAPE_DELAY  # it might have been the start of a sequence


class _Recording(LoopInput):
    closed = 0

    def close(self) -> None:
        self.closed += 1
        super().close()


async def test_the_end_of_the_input_stops_reading(pipe):
    """A piped input that ends is no longer watched (the loop would find it readable forever)."""
    read, write = pipe
    received: list[Any] = []
    reader = _Recording(read, received.append, lambda: received.append("failed"))
    os.close(write)
    await _until(lambda: reader.closed)
    assert not asyncio.get_running_loop().remove_reader(read)
    assert received == []


def _pastes(received: list[Any]) -> list[str]:
    return [event.text for event in received if isinstance(event, events.Paste)]


async def test_a_pasted_escape_sequence_and_newline_stay_in_the_paste(typed):
    """Textual's parser took the pasted ESC for the start of a key and sent the rest, newline and
    all, as typed keys: an Enter that sent the prompt."""
    write, received = typed
    os.write(write, b"x\x1b[200~one\x1b[A two\nthree\x1b[201~y")
    await _until(lambda: _keys(received) == ["x", "y"])
    assert _pastes(received) == ["one\x1b[A two\nthree"]
    assert [type(event) for event in received] == [events.Key, events.Paste, events.Key]


async def test_a_paste_cut_across_reads_in_its_markers_is_one_paste(typed):
    write, received = typed
    for part in (b"\x1b[20", b"0~first\x1b", b"[Ahalf\x1b[2", b"01~", b"z"):
        os.write(write, part)
        await asyncio.sleep(0.02)  # each its own read
    await _until(lambda: _keys(received) == ["z"])
    assert _pastes(received) == ["first\x1b[Ahalf"]


async def test_the_start_of_a_key_sequence_held_back_still_becomes_its_key(typed):
    """``ESC [`` might have begun a paste: held back, it goes on to the parser once nothing came."""
    write, received = typed
    os.write(write, b"\x1b[")
    await _until(lambda: bool(received))
    assert _keys(received) == ["left_square_bracket"]  # as Textual's parser reads it alone
