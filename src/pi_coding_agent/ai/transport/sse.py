"""Server-sent events parsed straight from a response's byte chunks.

One parser for every SSE adapter, fed the raw bytes the HTTP client hands over: one UTF-8 decode
and one split per network chunk instead of a text decoder, a line decoder and a line-by-line event
decoder stacked as async iterators. Lines end at CRLF, CR or LF (a CR at the end of a chunk waits
for the next one, which may start with its LF); fields are read as the WHATWG event-stream
interpretation says, with the behaviour of ``httpx_sse`` at the edges (an unterminated last event
is not dispatched; ``id`` is kept across events). One line, or one event's data, longer than the
parser's bound raises ``EventTooLarge``: a server (or a gzip bomb) cannot make it hold without limit.
"""

from __future__ import annotations

import contextlib


class ServerSentEvent:
    """One dispatched event; ``event`` is ``"message"`` when the stream named none."""

    __slots__ = ("data", "event", "id", "retry")

    def __init__(self, event: str, data: str, id: str, retry: int | None) -> None:
        self.event = event
        self.data = data
        self.id = id
        self.retry = retry

    def __repr__(self) -> str:
        return f"ServerSentEvent(event={self.event!r}, data={self.data!r}, id={self.id!r}, retry={self.retry!r})"


class EventTooLarge(ValueError):
    """A line or an event's data grew past the parser's bound."""


class SSEParser:
    """Incremental: ``feed`` each chunk as it arrives, ``close`` at the end of the body."""

    def __init__(self, max_bytes: int = 64 << 20) -> None:
        self.max_bytes = max_bytes
        self._tail = b""  # bytes after the last complete line (may end with a held-back CR)
        self._held: list[bytes] = []  # chunks without a line end after ``_tail``, joined once one comes
        self._held_bytes = 0
        self._event = ""
        self._data: list[str] = []
        self._id = ""
        self._retry: int | None = None

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        """The events completed by ``chunk``."""
        if (chunk.startswith(b"data: ") and chunk.find(b"\n") == len(chunk) - 2 and chunk.endswith(b"\n\n")
                and not (self._tail or self._held or self._data or self._event or self._retry is not None) and b"\r" not in chunk):
            # The usual network chunk: exactly one event of one data line, nothing pending.
            return [ServerSentEvent("message", chunk[6:-2].decode("utf-8", "replace"), self._id, None)]
        if b"\n" not in chunk and b"\r" not in chunk:  # still inside a line: keep it without copying the rest
            return self._hold(chunk)
        if self._held:
            self._tail, self._held, self._held_bytes = b"".join([self._tail, *self._held]), [], 0
        data = self._tail + chunk if self._tail else chunk
        held = b""
        if b"\r" in data:
            if data.endswith(b"\r"):  # maybe the first half of a CRLF split across chunks
                data, held = data[:-1], b"\r"
            data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        cut = data.rfind(b"\n") + 1
        self._tail = data[cut:] + held
        if len(self._tail) > self.max_bytes:
            raise EventTooLarge(f"a server-sent event line is longer than {self.max_bytes} bytes")
        if not cut:
            return []
        lines = data[:cut].decode("utf-8", "replace").split("\n")
        lines.pop()  # the empty string after the last line end
        events = self._lines(lines)
        if self._data and sum(map(len, self._data)) > self.max_bytes:
            raise EventTooLarge(f"a server-sent event's data is longer than {self.max_bytes} bytes")
        return events

    def _hold(self, chunk: bytes) -> list[ServerSentEvent]:
        self._held.append(chunk)
        self._held_bytes += len(chunk)
        if len(self._tail) + self._held_bytes > self.max_bytes:
            raise EventTooLarge(f"a server-sent event line is longer than {self.max_bytes} bytes")
        return []

    def close(self) -> list[ServerSentEvent]:
        """Events completed by the end of the body: an unterminated last line still counts as a line."""
        tail, self._tail = b"".join([self._tail, *self._held]), b""
        self._held, self._held_bytes = [], 0
        if not tail:
            return []
        return self._lines([tail.removesuffix(b"\r").decode("utf-8", "replace")])

    def _lines(self, lines: list[str]) -> list[ServerSentEvent]:
        events: list[ServerSentEvent] = []
        data = self._data
        # the hot path is an event line (or none), one data line, then the blank line; slices,
        # because ``str.startswith`` parses its arguments the slow way (about three times the instructions)
        for line in lines:
            if not line:
                if data or self._event or self._id or self._retry is not None:
                    events.append(ServerSentEvent(self._event or "message",
                                                  data[0] if len(data) == 1 else "\n".join(data),
                                                  self._id, self._retry))
                    data = self._data = []
                    self._event, self._retry = "", None  # the last event id carries over
            elif line[:5] == "data:":
                data.append(line[6:] if line[5:6] == " " else line[5:])
            elif line[:6] == "event:":  # every event of Anthropic's and the Responses API's streams
                self._event = line[7:] if line[6:7] == " " else line[6:]
            elif line[0] != ":":
                self._field(line)
        return events

    def _field(self, line: str) -> None:
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "event":
            self._event = value
        elif name == "data":  # a bare ``data`` line
            self._data.append(value)
        elif name == "id":
            if "\0" not in value:
                self._id = value
        elif name == "retry":
            with contextlib.suppress(ValueError):
                self._retry = int(value)
