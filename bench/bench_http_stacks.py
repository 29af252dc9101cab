"""HTTP stacks for a streamed answer (issue #40): what importing each costs, and CPU per SSE delta.

The decision data for the one-shot path, whose largest share is the HTTP client's import. For each
stack, two figures:

* import: instructions (callgrind, one process) of ``import asyncio, json`` plus the stack, less
  ``import asyncio, json`` alone. aiohttp is imported the way ``ai/transport/aio.py`` does it (its
  default TLS contexts left without their CA loads), over that module; httpx also with its client
  made, since ``AsyncClient()`` builds the TLS context a request needs.
* per delta: CPU (user + system) of this process while it reads one streamed chat-completions
  answer of ``--deltas`` SSE events (default 5,000) from a local fake server in another process,
  divided by the number of events; median over ``--runs`` streams after one warm-up stream. Every
  stack hands its network reads to the same SSE parser (``ai/transport/sse.py``) and ``orjson``
  decodes each event, as the provider adapters do, so the rows differ only by the stack.

Stacks: ``aiohttp`` (the body's ``iter_any``), ``aiohttp via ai/transport/aio.py`` (what a request
does today: ``open_response`` with its idle-timeout watch), ``h11 over asyncio streams`` (a
hand-written client: h11 frames, asyncio reads), and ``httpx`` (``AsyncClient.stream``, over h11
and anyio) when it is installed; it is not a dependency of the package, the row says so otherwise.

The server writes each event as its own HTTP chunk, ``--pace-us`` apart (default 100 us), so the
client's reads bring one event or a few, as from a real model server; ``--pace-us 0`` sends them as
fast as the client takes them, which aiohttp then reads in a few large reads. The last column
counts the pieces each stack handed to the parser (aiohttp: network reads; h11 and httpx: HTTP
chunks).

    .venv/bin/python bench/bench_http_stacks.py [--deltas 5000] [--runs 5] [--no-imports]
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import orjson
from common import ROOT

EVENT = (b'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m",'
         b'"choices":[{"index":0,"delta":{"content":"tok "},"finish_reason":null}]}\n\n')
BODY = orjson.dumps({"model": "m", "stream": True, "messages": [{"role": "user", "content": "hello"}]})
HEADERS = {"content-type": "application/json", "authorization": "Bearer dummy"}
BASE = "import asyncio, json"
# stack -> (extra import statement, the baseline it is measured over)
IMPORTS = {
    "aiohttp": ("aio._import_aiohttp()", f"{BASE}; from pi_coding_agent.ai.transport import aio"),
    "h11 over asyncio streams": ("import h11", BASE),
    "httpx": ("import httpx", BASE),
    "httpx, client made": ("import httpx; httpx.AsyncClient()", BASE),
}

Reader = Callable[[str, int], AsyncIterator[bytes]]


# ----------------------------------------------------------------------------- the fake server


async def serve_forever(deltas: int, pace_s: float) -> None:
    """Answer every POST with ``deltas`` events then ``[DONE]``, one chunk each, ``pace_s`` apart
    (0: as fast as the client takes them); print the port."""
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = re.search(rb"(?i)content-length:\s*(\d+)", head)
        await reader.readexactly(int(length.group(1)) if length else 0)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n"
                     b"connection: close\r\n\r\n")
        chunk = b"%x\r\n%s\r\n" % (len(EVENT), EVENT)
        for _ in range(deltas):
            writer.write(chunk)
            await writer.drain()
            if pace_s:
                await asyncio.sleep(pace_s)
        done = b"data: [DONE]\n\n"
        writer.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(done), done))
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


# ----------------------------------------------------------------------------- the clients


async def aiohttp_chunks(url: str, _port: int) -> AsyncIterator[bytes]:
    from pi_coding_agent.ai.transport import aio

    aio._import_aiohttp()
    import aiohttp

    async with aiohttp.ClientSession() as session, session.post(url, data=BODY, headers=HEADERS) as response:
        async for chunk in response.content.iter_any():
            yield chunk


async def transport_chunks(url: str, _port: int) -> AsyncIterator[bytes]:
    from pi_coding_agent.ai.transport import aio

    async with aio.open_response(url, HEADERS, BODY, 10.0, 60.0) as response:
        async for chunk in response.aiter_bytes():
            yield chunk


async def h11_chunks(_url: str, port: int) -> AsyncIterator[bytes]:
    import h11

    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    conn = h11.Connection(h11.CLIENT)
    headers = [("host", f"127.0.0.1:{port}"), ("content-length", str(len(BODY))), *HEADERS.items()]
    writer.write(conn.send(h11.Request(method="POST", target="/v1/chat/completions", headers=headers))
                 + conn.send(h11.Data(data=BODY)) + conn.send(h11.EndOfMessage()))
    try:
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(await reader.read(1 << 16))
            elif isinstance(event, h11.Data):
                yield bytes(event.data)
            elif isinstance(event, (h11.EndOfMessage, h11.ConnectionClosed)):
                return
    finally:
        writer.close()


async def httpx_chunks(url: str, _port: int) -> AsyncIterator[bytes]:
    import httpx

    async with httpx.AsyncClient() as client, client.stream("POST", url, content=BODY, headers=HEADERS) as response:
        async for chunk in response.aiter_raw():
            yield chunk


def stacks() -> dict[str, Reader | str]:
    """Stack -> its reader, or why it is skipped."""
    found: dict[str, Reader | str] = {"aiohttp": aiohttp_chunks, "aiohttp via ai/transport/aio.py": transport_chunks,
                                      "h11 over asyncio streams": h11_chunks, "httpx": httpx_chunks}
    for name, module in (("h11 over asyncio streams", "h11"), ("httpx", "httpx")):
        try:
            __import__(module)
        except ImportError:
            found[name] = f"skipped: {module} is not installed (not a dependency of the package)"
    return found


async def one_stream(read: Reader, url: str, port: int) -> tuple[float, int, int]:
    """CPU seconds of this process over one stream, events parsed, pieces read."""
    from pi_coding_agent.ai.transport.sse import SSEParser

    parser, events, reads = SSEParser(), 0, 0
    started = time.process_time()
    async for chunk in read(url, port):
        reads += 1
        for event in parser.feed(chunk):
            if event.data != "[DONE]":
                orjson.loads(event.data)
                events += 1
    events += len(parser.close())
    return time.process_time() - started, events, reads


async def per_delta(read: Reader, port: int, runs: int, deltas: int) -> tuple[float, float]:
    """Median CPU microseconds per delta over ``runs`` streams (after a warm-up one), median pieces."""
    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    await one_stream(read, url, port)
    cpu, reads = [], []
    for _ in range(runs):
        seconds, events, count = await one_stream(read, url, port)
        if events != deltas:
            raise RuntimeError(f"{events} events parsed, {deltas} sent")
        cpu.append(seconds / deltas * 1e6)
        reads.append(count)
    return statistics.median(cpu), statistics.median(reads)


# ----------------------------------------------------------------------------- imports


def import_instructions(statement: str, base: str) -> float | None:
    """Millions of instructions ``statement`` adds to ``base`` (callgrind; None without valgrind)."""
    if shutil.which("valgrind") is None:
        return None
    return _instructions(f"{base}; {statement}") - _instructions(base)


def _instructions(code: str) -> float:
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "cg.out"
        subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, "-c", code],
                       capture_output=True, check=True, cwd=ROOT)
        found = re.search(r"^(?:totals|summary): (\d+)", out.read_text(), re.M)
        assert found is not None
        return int(found.group(1)) / 1e6


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deltas", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--pace-us", type=float, default=100.0,
                        help="the server's pause between events (0: a burst, read in a few large reads)")
    parser.add_argument("--no-imports", action="store_true", help="skip the callgrind import counts")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(serve_forever(args.deltas, args.pace_us / 1e6))
        return
    server = subprocess.Popen([sys.executable, __file__, "--serve", "--deltas", str(args.deltas),
                               "--pace-us", str(args.pace_us)],
                              stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT / "bench")})
    assert server.stdout is not None
    port = int(server.stdout.readline())
    try:
        print(f"{'stack':34} {'import (M instr.)':>18} {'CPU per delta (us)':>19} {'pieces per stream':>17}")
        for name, read in stacks().items():
            if isinstance(read, str):
                print(f"{name:34} {read}")
                continue
            statement, base = IMPORTS.get(name, (None, ""))
            imported = None if args.no_imports or statement is None else import_instructions(statement, base)
            cpu_us, reads = asyncio.run(per_delta(read, port, args.runs, args.deltas))
            print(f"{name:34} {'-' if imported is None else f'{imported:.1f}':>18} {cpu_us:19.2f} {reads:17.0f}")
        if not args.no_imports and "httpx" in sys.modules:
            for name in ("httpx, client made",):
                statement, base = IMPORTS[name]
                print(f"{name:34} {import_instructions(statement, base) or 0:18.1f}")
    finally:
        server.kill()
        server.wait()
    print(f"{args.deltas} deltas a stream, {args.pace_us:g} us apart, median of {args.runs} streams; "
          f"imports over `{BASE}`")


if __name__ == "__main__":
    main()
