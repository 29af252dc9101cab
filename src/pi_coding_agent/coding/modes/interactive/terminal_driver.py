"""Textual's Linux/macOS terminal driver, with its input and output on the event loop's thread.

Textual reads keys on an input thread and writes frames on an output thread. A typed key then
woke three threads in turn (input, event loop, output), and each needed the GIL from whichever
held it: on a loaded machine each wake-up waits for a core, and the loop, made to hand the GIL
over, waits until the other thread has run. ``LoopDriver`` reads the terminal with the loop's own
``add_reader`` and writes each frame before ``_display`` returns, as a single-threaded terminal
program does: the key's path is one thread from read to write.

Bracketed pastes are cut out of the input before Textual's parser sees it (``PasteCutter``): inside
a paste, its parser took an escape byte as the start of a key sequence and sent what followed as
keys, so a pasted ESC turned the rest of the paste, newlines too, into typed keys and Enter.
"""

from __future__ import annotations

import os
from codecs import getincrementaldecoder
from collections.abc import Callable, Iterable, Iterator

from textual import constants, events
from textual._xterm_parser import BRACKETED_PASTE_END, BRACKETED_PASTE_START, XTermParser
from textual.drivers.linux_driver import LinuxDriver
from textual.message import Message


def _marker_start(text: str, marker: str, shortest: int) -> int:
    """How many characters, ``shortest`` or more, at the end of ``text`` could begin ``marker``."""
    for size in range(min(len(marker) - 1, len(text)), shortest - 1, -1):
        if text.endswith(marker[:size]):
            return size
    return 0


class PasteCutter:
    """Splits the terminal's input into text for the key parser and whole ``Paste`` events.

    A marker cut across two reads is held back until the next read, or until ``flush`` when none
    came in time. Outside a paste a lone ESC is not held: it goes on to the parser at once, which
    reports the Escape key on time (a paste starting right behind it is then left to the parser).
    """

    def __init__(self) -> None:
        self._paste: list[str] | None = None  # the pasted text so far, inside a paste
        self._held = ""

    def split(self, text: str) -> list[str | events.Paste]:
        text, self._held = self._held + text, ""
        pieces: list[str | events.Paste] = []
        while text:
            inside = self._paste is not None
            marker = BRACKETED_PASTE_END if inside else BRACKETED_PASTE_START
            found = text.find(marker)
            if found < 0:
                cut = len(text) - _marker_start(text, marker, 1 if inside else 2)
                text, self._held = text[:cut], text[cut:]
            before = text if found < 0 else text[:found]
            if self._paste is None:
                pieces.append(before)
                self._paste = None if found < 0 else []
            else:
                self._paste.append(before)
                if found >= 0:
                    pieces.append(events.Paste("".join(self._paste).replace("\x00", "")))
                    self._paste = None
            text = "" if found < 0 else text[found + len(marker):]
        return [piece for piece in pieces if piece != ""]

    def flush(self) -> str:
        """Key text held back as a possible paste start, once nothing followed it in time."""
        if self._paste is not None:
            return ""
        held, self._held = self._held, ""
        return held


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
        self._pastes = PasteCutter()
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
        pieces = self._pastes.split(self._decode(data))
        self._hand_over(lambda: self._parse(pieces))

    def _parse(self, pieces: list[str | events.Paste]) -> Iterator[Message]:
        for piece in pieces:
            if isinstance(piece, str):
                yield from self._parser.feed(piece)
            else:
                yield piece

    def _on_tick(self) -> None:
        self._tick = None
        held = self._pastes.flush()
        if held:  # the start of another sequence after all: the parser waits for its end in turn
            self._tick = self._loop.call_later(constants.ESCAPE_DELAY, self._on_tick)
            self._hand_over(lambda: self._parser.feed(held))
            return
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
