"""Strict JSONL transport for RPC mode: how records are framed.

stdout belongs to the protocol alone (``lifecycle.take_over_stdout`` moves it to a private fd at
start-up; ``take_over_stdin`` likewise).

Input is split on ``b"\\n"`` only (never ``str.splitlines``, which also breaks on U+2028 and
friends), one trailing ``b"\\r"`` is dropped, lines have no length limit, and bytes after the last
LF are still a line at EOF. Output goes through one queue drained by one task, so records never
interleave and a client that stops reading slows the writer down instead of growing a pipe buffer.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
import sys
from collections import deque
from collections.abc import AsyncIterator, Iterable, Iterator

import orjson

from pi_coding_agent.coding.modes.lifecycle import write_all

READ_CHUNK = 1 << 16
FLUSH_TIMEOUT_S = 5.0
BACKLOG_LIMIT = 8 << 20  # queued output bytes past which the RPC reader stops taking commands
BATCH_BYTES = 256 << 10  # small records are joined into writes up to this size; larger go alone
READER_WAIT_S = 0.5  # how long agent_end waits for a client to read it before the run settles anyway


class LineSplitter:
    """Turns a byte stream into JSONL lines (LF only, one trailing CR stripped, no size limit)."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._scanned = 0  # bytes of _buffer already known to hold no LF (keeps long lines linear)

    def feed(self, data: bytes) -> list[bytes]:
        self._buffer += data
        lines: list[bytes] = []
        start = 0
        while (end := self._buffer.find(b"\n", max(start, self._scanned))) != -1:
            lines.append(_strip_cr(bytes(self._buffer[start:end])))
            start = end + 1
        if start:
            del self._buffer[:start]
        self._scanned = len(self._buffer)
        return lines

    def finish(self) -> bytes | None:
        """The unterminated tail at EOF, if any."""
        if not self._buffer:
            return None
        tail = _strip_cr(bytes(self._buffer))
        self._buffer.clear()
        self._scanned = 0
        return tail


def _strip_cr(line: bytes) -> bytes:
    return line[:-1] if line.endswith(b"\r") else line


async def read_lines(fd: int) -> AsyncIterator[bytes]:
    """Yield every input line of ``fd`` until EOF (including an unterminated last one)."""
    splitter = LineSplitter()
    async for chunk in _read_chunks(fd):
        for line in splitter.feed(chunk):
            yield line
    tail = splitter.finish()
    if tail is not None:
        yield tail


async def _read_chunks(fd: int) -> AsyncIterator[bytes]:
    loop = asyncio.get_running_loop()
    if not _pollable(fd):
        # A file or /dev/null (``pi --mode rpc < commands.jsonl``): reads never block for long.
        while chunk := await loop.run_in_executor(None, os.read, fd, READ_CHUNK):
            yield chunk
        return
    reader = asyncio.StreamReader(limit=READ_CHUNK)
    pipe = os.fdopen(fd, "rb", buffering=0, closefd=False)
    transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
    try:
        while chunk := await reader.read(READ_CHUNK):
            yield chunk
    finally:
        transport.close()


def _pollable(fd: int) -> bool:
    """Whether the event loop can wait on ``fd`` (pipes, sockets, terminals; not files or /dev/null)."""
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd)


class StreamedJson:
    """A value too large to serialise whole (a session's tree, its entries): a record holding one is
    written with the value's chunks in its place, as they come, so the line never exists whole."""

    __slots__ = ("chunks",)

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self.chunks = iter(chunks)


_STREAM_MARK = b"\x00"  # a raw NUL: orjson escapes it inside strings, so only a placeholder writes it


class RecordWriter:
    """The single writer of protocol records; ``send`` never blocks, ``flush`` waits for the bytes."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._pending: deque[bytes | bytearray | Iterator[bytes]] = deque()  # writes, in order
        self._streams: list[StreamedJson] = []  # met while serialising the current record
        self._pending_bytes = 0
        self._below_limit = asyncio.Event()
        self._below_limit.set()
        self._wakeup = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._closing = False
        self._broken = False
        self._stream: asyncio.StreamWriter | None = None
        self._task: asyncio.Task[None] | None = None
        self._batch: list[bytes] = []  # records of this event-loop pass, written at its end
        self._loop: asyncio.AbstractEventLoop | None = None  # the pipe's loop (none for files)

    async def start(self) -> None:
        if _pollable(self._fd):  # files and /dev/null get plain blocking writes
            loop = self._loop = asyncio.get_running_loop()
            pipe = os.fdopen(self._fd, "wb", buffering=0, closefd=False)
            transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, pipe)
            self._stream = asyncio.StreamWriter(transport, protocol, None, loop)
        self._task = asyncio.create_task(self._drain_queue(), name="rpc-writer")

    def send(self, record: object) -> None:
        """Queue one record; the order of ``send`` calls is the order on stdout."""
        try:
            data = orjson.dumps(record, default=self._placeholder, option=orjson.OPT_APPEND_NEWLINE)
        except TypeError as err:
            self._streams.clear()
            print(f"rpc: dropped an unserialisable record: {err}", file=sys.stderr)
            return
        if self._streams:
            self._spill_batch()  # sent before this record
            self._queue_streamed(data)
            self._queued(len(data))
        elif self._pending:
            # A backlog (a client slower than the model): the writer task is already awake and
            # the queue already not idle, so the record only joins the queue's last write.
            self._append(data)
            self._pending_bytes += len(data)
            if self._pending_bytes > BACKLOG_LIMIT:
                self._below_limit.clear()
        elif self._loop is not None:
            # Nothing queued: the records of this event-loop pass go to the pipe in one write at its
            # end, without the writer task (which waits for a slow client and drains the backlog).
            batch = self._batch
            batch.append(data)
            if len(batch) == 1:
                self._idle.clear()
                self._loop.call_soon(self._write_batch)
        else:
            self._append(data)
            self._queued(len(data))

    def _append(self, data: bytes) -> None:
        """Add ``data`` to the queue: joined onto its last write while that stays within
        ``BATCH_BYTES`` (one copy now instead of one queue entry per record), a large record alone."""
        pending = self._pending
        tail = pending[-1] if pending else None
        if type(tail) is bytearray and len(tail) + len(data) <= BATCH_BYTES:
            tail += data
        elif len(data) < BATCH_BYTES:
            pending.append(bytearray(data))
        else:
            pending.append(data)

    def _queued(self, size: int) -> None:
        self._pending_bytes += size
        if self._pending_bytes > BACKLOG_LIMIT:
            self._below_limit.clear()
        self._idle.clear()
        self._wakeup.set()

    def _spill_batch(self) -> None:
        """Move this pass's unwritten records to the head of the writer task's queue (still in order:
        they only gather while the queue is empty)."""
        if self._batch:
            batch, self._batch = self._batch, []
            for data in batch:
                self._append(data)
            self._queued(sum(map(len, batch)))

    def _write_batch(self) -> None:
        """This pass's records, in one write to the pipe's transport while it holds less than
        ``BATCH_BYTES`` the client has not taken (else, or once it is closing, they queue instead)."""
        if not self._batch:
            return  # spilled into the queue meanwhile
        stream = self._stream
        assert stream is not None
        transport = stream.transport
        if self._broken or transport.is_closing() or transport.get_write_buffer_size() > BATCH_BYTES:
            self._spill_batch()
            return
        batch, self._batch = self._batch, []
        transport.write(batch[0] if len(batch) == 1 else b"".join(batch))
        if not self._pending:
            self._idle.set()

    def _placeholder(self, value: object) -> orjson.Fragment:
        if not isinstance(value, StreamedJson):
            raise TypeError(f"Type is not JSON serializable: {type(value).__name__}")
        self._streams.append(value)
        return orjson.Fragment(_STREAM_MARK)

    def _queue_streamed(self, data: bytes) -> None:
        """The record's own bytes around each streamed value, the value's chunks in between."""
        parts = data.split(_STREAM_MARK)
        self._pending.append(parts[0])
        for stream, part in zip(self._streams, parts[1:], strict=True):
            self._pending.append(stream.chunks)
            self._pending.append(part)
        self._streams.clear()

    async def below_backlog_limit(self) -> None:
        """Wait while more than ``BACKLOG_LIMIT`` bytes of output wait for a client that reads slowly."""
        await self._below_limit.wait()

    async def flush(self) -> None:
        """Wait until everything sent so far has been handed to the OS: the queue and the bytes the
        pipe's transport still holds (a record larger than the pipe is written in parts)."""
        await self._idle.wait()
        stream = self._stream
        if stream is not None and not self._broken and stream.transport.get_write_buffer_size():
            await _drained(stream)

    async def flush_to_reader(self, timeout: float = READER_WAIT_S) -> None:
        """Flush, then wait (bounded) until the client has read everything out of a pipe.

        Used for ``agent_end``, which clients expect to be the last record they have read when it
        arrives: the next record is only written once the pipe is empty (Linux ``FIONREAD``).
        """
        await self.flush()
        if self._broken or not stat.S_ISFIFO(os.fstat(self._fd).st_mode):
            return
        deadline = asyncio.get_running_loop().time() + timeout
        while self._unread() > 0 and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.001)

    def _unread(self) -> int:
        """Bytes still in the transport's buffer or in the pipe, not yet read by the client."""
        import fcntl
        import termios

        buffered = 0 if self._stream is None else self._stream.transport.get_write_buffer_size()
        return buffered + int.from_bytes(fcntl.ioctl(self._fd, termios.FIONREAD, bytes(4)), sys.byteorder)

    async def close(self) -> None:
        """Flush (bounded: a client that never reads must not block exit) and stop the writer."""
        self._spill_batch()
        self._closing = True
        self._wakeup.set()
        if self._task is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._finish(), FLUSH_TIMEOUT_S)
            self._task.cancel()
        if self._stream is not None:
            self._stream.close()

    async def _finish(self) -> None:
        assert self._task is not None
        await asyncio.shield(self._task)
        if self._stream is not None and not self._broken:
            await _drained(self._stream)

    async def _drain_queue(self) -> None:
        while True:
            await self._wakeup.wait()
            self._wakeup.clear()
            while self._pending:
                data = self._pending.popleft()
                if not isinstance(data, bytes | bytearray):
                    await self._write_chunks(data)
                    continue
                await self._write(data)
                self._pending_bytes -= len(data)
                if self._pending_bytes <= BACKLOG_LIMIT:
                    self._below_limit.set()
            if not self._batch:  # else _write_batch sets it once the pass's records are written
                self._idle.set()
            if self._closing:
                return

    async def _write_chunks(self, chunks: Iterator[bytes]) -> None:
        """Each chunk as it is produced; one that fails leaves the line unparseable, never unterminated."""
        try:
            for chunk in chunks:
                await self._write(chunk)
        except Exception as err:  # the record's tail still follows, so the line ends
            print(f"rpc: a streamed response failed midway: {err}", file=sys.stderr)

    async def _write(self, data: bytes | bytearray) -> None:
        if self._broken:
            return
        try:
            if self._stream is None:
                write_all(self._fd, data)
            else:
                self._stream.write(data)
                await self._stream.drain()
        except (BrokenPipeError, ConnectionResetError):
            self._broken = True
            print("rpc: stdout closed by the client; further records are dropped", file=sys.stderr)


async def _drained(stream: asyncio.StreamWriter) -> None:
    """Until the transport's buffer is empty: ``drain()`` only waits above the high-water mark, so
    the mark is zero while it waits (then back to asyncio's default)."""
    stream.transport.set_write_buffer_limits(high=0)
    try:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            await stream.drain()
    finally:
        if not stream.transport.is_closing():
            stream.transport.set_write_buffer_limits()
