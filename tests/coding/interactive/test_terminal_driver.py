"""The terminal driver's input on the event loop (``terminal_driver.LoopInput``), over a real pipe."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable, Iterator
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


async def _until(predicate: Callable[[], object], timeout: float = 5.0) -> None:
    """Let the loop run until ``predicate()`` holds (it fails the test on timeout)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        assert loop.time() < deadline, "timed out"
        await asyncio.sleep(0.01)


def _keys(received: list[Any]) -> list[str]:
    return [event.key for event in received if isinstance(event, events.Key)]


async def test_keys_are_read_on_the_loop_as_they_arrive(pipe):
    read, write = pipe
    received: list[Any] = []
    reader = LoopInput(read, received.append, lambda: received.append("failed"))
    try:
        os.write(write, b"ab\x1b[A")  # two letters and the up arrow, in one read
        await _until(lambda: len(_keys(received)) == 3)
        assert _keys(received) == ["a", "b", "up"]
    finally:
        reader.close()


async def test_a_lone_escape_is_a_key_once_the_escape_delay_has_passed(pipe):
    read, write = pipe
    received: list[Any] = []
    reader = LoopInput(read, received.append, lambda: received.append("failed"))
    try:
        loop = asyncio.get_running_loop()
        sent = loop.time()
        os.write(write, b"\x1b")
        await _until(lambda: _keys(received) == ["escape"])
        assert loop.time() - sent >= constants.ESCAPE_DELAY  # it might have been the start of a sequence
    finally:
        reader.close()


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
