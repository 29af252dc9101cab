"""RecordWriter on a pipe whose reader falls behind: records sent while a backlog is queued join the
queue's last write, a record larger than a write goes alone, a streamed one between them keeps its
place, and the client reads every line whole and in order."""

from __future__ import annotations

import asyncio
import os
import threading

import orjson

from pi_coding_agent.coding.modes.rpc.transport import BATCH_BYTES, RecordWriter, StreamedJson


def _read_all(fd: int, sink: bytearray, start: threading.Event) -> None:
    start.wait()
    while chunk := os.read(fd, 1 << 16):
        sink += chunk


async def test_a_backlog_keeps_every_record_whole_and_in_order() -> None:
    read_fd, write_fd = os.pipe()
    received = bytearray()
    start = threading.Event()
    reader = threading.Thread(target=_read_all, args=(read_fd, received, start))
    reader.start()
    writer = RecordWriter(write_fd)
    await writer.start()
    expected: list[object] = []

    def send(record: dict[str, object], shown: object | None = None) -> None:
        writer.send(record)
        expected.append(record if shown is None else shown)

    try:
        for n in range(3000):  # ~600 KB in one pass: more than the pipe holds, so the rest queues
            send({"type": "delta", "n": n, "text": "x" * 200})
        await asyncio.sleep(0)  # the pass ends: its batch meets a full pipe and queues behind it
        big = "y" * (BATCH_BYTES + 10)
        send({"type": "big", "text": big})  # larger than one write: queued as it is
        send({"type": "after-big", "n": 0})
        parts = [orjson.dumps({"k": k}) for k in range(50)]
        send({"type": "streamed", "items": StreamedJson([b"[", b",".join(parts), b"]"])},
             {"type": "streamed", "items": [{"k": k} for k in range(50)]})
        for n in range(2000):
            send({"type": "tail", "n": n})
        start.set()  # the client starts reading only now
        await writer.flush()
        await writer.close()
    finally:
        os.close(write_fd)
        start.set()
        reader.join(10)
        os.close(read_fd)
    lines = bytes(received).split(b"\n")
    assert lines.pop() == b""
    assert [orjson.loads(line) for line in lines] == expected
