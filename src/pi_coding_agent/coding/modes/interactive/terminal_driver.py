"""Textual's Linux/macOS terminal driver, with its input and output on the event loop's thread.

Textual reads keys on an input thread and writes frames on an output thread. A typed key then
woke three threads in turn (input, event loop, output), and each needed the GIL from whichever
held it: on a loaded machine each wake-up waits for a core, and the loop, made to hand the GIL
over, waits until the other thread has run. ``LoopDriver`` reads the terminal with the loop's own
``add_reader`` and writes each frame before ``_display`` returns, as a single-threaded terminal
program does: the key's path is one thread from read to write.
"""

from __future__ import annotations

import os
from codecs import getincrementaldecoder
from collections.abc import Callable, Iterable

from textual import constants
from textual._xterm_parser import XTermParser
from textual.drivers.linux_driver import LinuxDriver
from textual.message import Message


class LoopInput:
    """Reads ``fd`` when the loop sees it readable and hands each parsed event to ``emit``.

    A lone Escape is only known once ``ESCAPE_DELAY`` has passed without the rest of a sequence,
    so the parser is asked again that long after each read.
    """

    def __init__(self, fd: int, emit: Callable[[Message], object], failed: Callable[[], object],
                 debug: bool = False) -> None:
        """``failed``: called inside the ``except`` block of an error reading or parsing."""
        import asyncio

        self.fd = fd
        self.emit = emit
        self.failed = failed
        self._loop = asyncio.get_running_loop()
        self._parser = XTermParser(debug)
        self._decode = getincrementaldecoder("utf-8")().decode
        self._tick: asyncio.TimerHandle | None = None
        self._loop.add_reader(fd, self._read)

    def close(self) -> None:
        self._loop.remove_reader(self.fd)
        if self._tick is not None:
            self._tick.cancel()

    def _read(self) -> None:
        try:
            data = os.read(self.fd, 4096)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self.close()
            self.failed()
            return
        if not data:  # the end of a piped input
            self.close()
            return
        if self._tick is not None:
            self._tick.cancel()
        self._tick = self._loop.call_later(constants.ESCAPE_DELAY, self._on_tick)
        self._hand_over(lambda: self._parser.feed(self._decode(data)))

    def _on_tick(self) -> None:
        self._tick = None
        self._hand_over(self._parser.tick)

    def _hand_over(self, parse: Callable[[], Iterable[Message]]) -> None:
        try:
            for event in parse():
                self.emit(event)
        except Exception:
            self.close()
            self.failed()


class LoopDriver(LinuxDriver):
    """``LinuxDriver`` reading and writing on the loop's thread (its input thread ends at once, its
    output thread stays idle)."""

    _input: LoopInput | None = None
    _want_input = False  # between starting the application mode and disabling input

    def start_application_mode(self) -> None:
        self._want_input = True
        super().start_application_mode()

    def _run_input_thread(self) -> None:
        """Textual's input thread: it asks the loop to read instead, and ends."""
        self._loop.call_soon_threadsafe(self._attach_input)

    def _attach_input(self) -> None:
        if self._input is None and self._want_input:
            self._input = LoopInput(self.fileno, self.process_message, self._input_failed, self._debug)

    def _input_failed(self) -> None:
        """As Textual's input thread ends on an error: the app shows it and exits."""
        import rich.traceback

        self._app.call_later(self._app.panic, rich.traceback.Traceback())

    def disable_input(self) -> None:
        self._want_input = False
        if self._input is not None:
            self._input.close()
            self._input = None
        super().disable_input()

    def send_message(self, message: Message) -> None:
        self._app.post_message(message)  # on the loop's thread: straight into the app's queue

    def write(self, data: str) -> None:
        assert self._file is not None, "no terminal to write to"
        self._file.write(data)

    def flush(self) -> None:
        assert self._file is not None, "no terminal to write to"
        self._file.flush()
