"""The provider transport (aiohttp through ``ai/transport/aio.py``) against raw servers on 127.0.0.1.

Each server here is an ``asyncio`` socket server whose handler writes the exact bytes under test
(chunk boundaries, a connection cut mid-chunk, a silent server, a redirect, a gzip bomb), so the
framing, keep-alive, abort, timeout, proxy, TLS and redirect paths are exercised on a real socket,
through ``post_stream`` and ``sse_events`` as the adapters call them.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import aclosing, asynccontextmanager

import pytest

from pi_coding_agent.ai.stream import ProviderError, StreamOptions
from pi_coding_agent.ai.transport import aio
from pi_coding_agent.ai.transport.http import post_stream, sse_events

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
SSE_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"


@pytest.fixture(autouse=True)
def no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """No proxy from the environment, and whatever a test (or ``httpProxy``) sets is undone after it."""
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        for spelling in (name, name.upper()):
            monkeypatch.setenv(spelling, "")
            monkeypatch.delenv(spelling)


class RawServer:
    """Serves each connection with ``handler``; records connections and request heads."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.connections = 0
        self.heads: list[bytes] = []
        self.closed_by_client = asyncio.Event()
        self.url = ""

    async def read_request(self, reader: asyncio.StreamReader) -> bytes:
        """One request (head and content-length body); empty when the client closed."""
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            return b""
        self.heads.append(head)
        length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                       if line.lower().startswith(b"content-length:")), 0)
        return head + await reader.readexactly(length)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            await self.handler(reader, writer)
            if not await reader.read(1):  # wait for the client's side to end
                self.closed_by_client.set()
        except (ConnectionError, asyncio.IncompleteReadError):
            self.closed_by_client.set()
        except asyncio.CancelledError:  # the test is over while a pooled connection is still open
            pass
        finally:
            writer.close()


@asynccontextmanager
async def raw_server(handler: Callable[[RawServer, asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
                     ) -> AsyncIterator[RawServer]:
    server = RawServer(lambda r, w: handler(server, r, w))
    listener = await asyncio.start_server(server._serve, "127.0.0.1", 0)
    server.url = f"http://127.0.0.1:{listener.sockets[0].getsockname()[1]}/v1/stream"
    async with listener:
        yield server


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


async def collect(url: str, **options: object) -> list[str]:
    async with aclosing(sse_events(url, {}, {"q": 1}, StreamOptions(**options))) as events:  # type: ignore[arg-type]
        return [event.data async for event in events]


async def test_chunked_events_split_anywhere_arrive_whole() -> None:
    body = chunk(b"data: one\n\n") + chunk(b"data: two\n\ndata: thr") + chunk(b"ee\n\n") + b"0\r\n\r\n"

    async def handler(server: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await server.read_request(reader)
        stream = SSE_HEAD + body
        for start in range(0, len(stream), 7):  # chunk-size lines and CRLFs cut across writes
            writer.write(stream[start:start + 7])
            await writer.drain()
            await asyncio.sleep(0)

    async with raw_server(handler) as server:
        assert await collect(server.url) == ["one", "two", "three"]
        head = server.heads[0].decode().lower()
        assert head.startswith("post /v1/stream http/1.1\r\n") and "content-length: 7\r\n" in head
        assert "accept: text/event-stream\r\n" in head and "content-type: application/json\r\n" in head


async def test_credentials_in_the_url_are_sent_as_basic_auth() -> None:
    async def handler(server: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await server.read_request(reader)
        writer.write(SSE_HEAD + b"0\r\n\r\n")

    async with raw_server(handler) as server:
        assert await collect(server.url.replace("http://", "http://user:p%40ss@")) == []
        head = server.heads[0].decode()
        assert "Authorization: Basic dXNlcjpwQHNz\r\n" in head and "@" not in head.split("\r\n")[1]


async def test_a_keep_alive_connection_serves_the_next_request() -> None:
    """Two requests, one connection; an informational answer before the real one is passed over."""
    async def handler(server: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while await server.read_request(reader):
            writer.write(b"HTTP/1.1 103 Early Hints\r\nlink: </x>\r\n\r\n" + SSE_HEAD + chunk(b"data: hi\n\n")
                         + b"0\r\n\r\n")
            await writer.drain()

    async with raw_server(handler) as server:
        assert await collect(server.url) == ["hi"]
        assert await collect(server.url) == ["hi"]
        assert server.connections == 1 and len(server.heads) == 2


async def test_a_content_length_body_and_an_error_status() -> None:
    error = b'{"error":{"message":"slow down"}}'

    async def handler(server: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await server.read_request(reader)
        writer.write(b"HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\nretry-after: 7\r\n"
                     b"content-length: %d\r\n\r\n%s" % (len(error), error))
        while await server.read_request(reader):
            events = b"data: a\n\ndata: b\n\n"
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: %d\r\n\r\n%s"
                         % (len(events), events))

    async with raw_server(handler) as server:
        with pytest.raises(ProviderError) as info:
            await collect(server.url)
        assert str(info.value) == '429: {"message":"slow down"}' and info.value.retry_after_ms == 7000
        assert await collect(server.url) == ["a", "b"]  # the error's connection was read out and reused
        assert server.connections == 1


def answer_then_cut(body: bytes, requests: int = 1) -> Callable[[RawServer, asyncio.StreamReader,
                                                              asyncio.StreamWriter], Awaitable[None]]:
    """A handler answering ``requests`` requests with an event stream of ``body``, then dropping the connection."""
    async def handler(server: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for _ in range(requests):
            await server.read_request(reader)
            writer.write(SSE_HEAD + body)
            await writer.drain()
        writer.transport.abort()
    return handler


async def test_a_server_closing_mid_chunk_is_a_transient_error() -> None:
    handler = answer_then_cut(chunk(b"data: first\n\n") + b"20\r\ndata: cut sh")
    async with raw_server(handler) as server:
        seen: list[str] = []
        with pytest.raises(ProviderError, match=r"^terminated: other side closed \(UND_ERR_SOCKET\)$"):
            async with aclosing(sse_events(server.url, {}, {}, StreamOptions())) as events:
                async for event in events:
                    seen.append(event.data)
        assert seen == ["first"]


async def test_closing_the_stream_early_closes_the_connection() -> None:
    """An abort mid-stream: the server sees its connection end, and the next request gets a new one."""
    async def handler(server: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if await server.read_request(reader):
            writer.write(SSE_HEAD + chunk(b"data: one\n\n"))
            await writer.drain()  # and never ends the body

    async with raw_server(handler) as server:
        async with aclosing(sse_events(server.url, {}, {}, StreamOptions())) as events:
            assert (await anext(events)).data == "one"
        await asyncio.wait_for(server.closed_by_client.wait(), 5)
        task = asyncio.create_task(collect(server.url))
        while len(server.heads) < 2:
            await asyncio.sleep(0.01)
        task.cancel()  # cancelled while waiting for data: closes that connection too
        with pytest.raises(asyncio.CancelledError):
            await task
        assert server.connections == 2


async def test_a_silent_server_times_out() -> None:
    async def handler(server: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await server.read_request(reader)
        writer.write(SSE_HEAD)
        await writer.drain()
        await asyncio.sleep(0.1)  # the body's first bytes come apart from the head, then nothing
        writer.write(chunk(b"data: one\n\n"))
        await asyncio.sleep(5)

    async with raw_server(handler) as server:
        loop = asyncio.get_running_loop()
        started = loop.time()
        with pytest.raises(ProviderError, match=r"^Request timed out\.$"):
            await collect(server.url, idle_timeout_s=0.3)
        assert 0.25 < loop.time() - started < 2


async def test_a_stale_pooled_connection_is_replaced() -> None:
    """The server drops its kept-alive connection as the next request arrives, before answering:
    that request is sent again on a new connection, and the reader never notices."""
    served = answer_then_cut(chunk(b"data: x\n\n") + b"0\r\n\r\n")

    async def handler(server: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if server.connections > 1:
            return await served(server, reader, writer)
        await server.read_request(reader)
        writer.write(SSE_HEAD + chunk(b"data: x\n\n") + b"0\r\n\r\n")
        await server.read_request(reader)
        writer.transport.abort()

    async with raw_server(handler) as server:
        assert await collect(server.url) == ["x"]
        assert await collect(server.url) == ["x"]
        assert server.connections == 2 and len(server.heads) == 3


async def test_gzip_bodies_are_decoded_and_large_ones_flow() -> None:
    big = b"".join(b"data: %d\n\n" % n for n in range(300_000))  # past the read pause threshold
    packed = gzip.compress(b"data: zipped\n\n")

    async def handler(server: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await server.read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-encoding: gzip\r\n"
                     b"transfer-encoding: chunked\r\n\r\n" + chunk(packed[:10]) + chunk(packed[10:]) + b"0\r\n\r\n")
        await server.read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % len(big))
        writer.write(big)
        await writer.drain()

    async with raw_server(handler) as server:
        assert await collect(server.url) == ["zipped"]
        async with post_stream(server.url, {}, b"", StreamOptions()) as response:
            await asyncio.sleep(0.2)  # let the socket fill the buffer while nobody reads
            assert await response.aread() == big


async def test_a_body_that_runs_to_the_end_of_the_connection() -> None:
    async def handler(server: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await server.read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\ndata: eof\n\n")
        await writer.drain()
        writer.close()

    async with raw_server(handler) as server:
        assert await collect(server.url) == ["eof"]


async def test_a_proxy_variable_routes_the_request_through_the_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """With HTTP_PROXY set the request goes to the proxy in absolute form."""
    async def handler(server: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await server.read_request(reader)
        writer.write(SSE_HEAD + chunk(b"data: proxied\n\n") + b"0\r\n\r\n")

    async with raw_server(handler) as server:
        monkeypatch.setenv("HTTP_PROXY", server.url.removesuffix("/v1/stream"))
        assert await collect("http://provider.invalid/v1/chat") == ["proxied"]
        assert server.heads[0].startswith(b"POST http://provider.invalid/v1/chat HTTP/1.1\r\n")


async def test_a_header_with_a_line_break_is_refused_before_anything_is_sent() -> None:
    async def handler(server: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await server.read_request(reader)

    async with raw_server(handler) as server:
        for headers in ({"x-team": "a\r\nx-admin: 1"}, {"x-bad\nname": "v"}):
            with pytest.raises(ValueError, match="line breaks"):
                async with post_stream(server.url, headers, b"", StreamOptions()):
                    pass
        assert server.connections == 0


async def test_a_refused_connection_names_the_error() -> None:
    with pytest.raises(ProviderError, match=r"^Connection error: "):
        await collect("http://127.0.0.1:9/v1")


@pytest.fixture
def fresh_tls(monkeypatch: pytest.MonkeyPatch) -> None:
    """The process's TLS context is built once; these tests build it again under their own trust."""
    monkeypatch.setattr(aio, "_tls", [])


@pytest.mark.slow
async def test_tls_verifies_against_ssl_cert_file_and_reuses_connections(tmp_path, monkeypatch, fresh_tls) -> None:
    import ssl

    from tests.support.fakes.tls_proxy import make_certificates

    ca, leaf, key = make_certificates(tmp_path, "127.0.0.1")
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(leaf, key)
    connections = 0

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError, ssl.SSLError):
            while head := await reader.readuntil(b"\r\n\r\n"):
                length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
                await reader.readexactly(length)
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
                await writer.drain()
        writer.close()

    listener = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=server_context)
    url = f"https://127.0.0.1:{listener.sockets[0].getsockname()[1]}/v1"
    async with listener:
        monkeypatch.delenv("SSL_CERT_FILE", raising=False)
        monkeypatch.delenv("SSL_CERT_DIR", raising=False)
        with pytest.raises(ProviderError, match=r"^Connection error: .*CERTIFICATE_VERIFY_FAILED"):
            async with post_stream(url, {}, b"", StreamOptions()):
                pass
        monkeypatch.setattr(aio, "_tls", [])
        monkeypatch.setenv("SSL_CERT_FILE", str(ca))
        for _ in range(2):
            async with post_stream(url, {}, b"x", StreamOptions()) as response:
                assert response.status_code == 200 and await response.aread() == b"ok"
        assert connections == 1  # both requests on one connection (a refused handshake never reaches it)


def sse_answer(events: bytes) -> Callable[[RawServer, asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]:
    async def handler(server: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while await server.read_request(reader):
            writer.write(SSE_HEAD + chunk(events) + b"0\r\n\r\n")
            await writer.drain()
    return handler


async def test_no_proxy_exempts_a_host_and_all_proxy_applies(monkeypatch: pytest.MonkeyPatch) -> None:
    async with raw_server(sse_answer(b"data: proxied\n\n")) as proxy, raw_server(sse_answer(b"data: direct\n\n")) as direct:
        monkeypatch.setenv("ALL_PROXY", proxy.url.removesuffix("/v1/stream"))
        assert await collect("http://provider.invalid/v1/chat") == ["proxied"]
        monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1")
        assert await collect(direct.url) == ["direct"]
        assert len(proxy.heads) == 1 and len(direct.heads) == 1


@pytest.mark.slow
async def test_https_proxy_tunnels_with_connect(tmp_path, monkeypatch: pytest.MonkeyPatch, fresh_tls) -> None:
    """HTTPS_PROXY: a CONNECT tunnel, TLS to the provider's host inside it (verified against SSL_CERT_FILE)."""
    from tests.support.fakes.tls_proxy import InterceptingProxy

    async with raw_server(sse_answer(b"data: tunnelled\n\n")) as upstream:
        port = int(upstream.url.split(":")[2].split("/")[0])
        with InterceptingProxy(tmp_path, "llm.example.invalid", port) as proxy:
            monkeypatch.setenv("HTTPS_PROXY", proxy.url)
            monkeypatch.setenv("SSL_CERT_FILE", str(proxy.ca))
            assert await collect("https://llm.example.invalid/v1/chat") == ["tunnelled"]
            assert upstream.heads[0].startswith(b"POST /v1/chat HTTP/1.1\r\n")


async def test_the_http_proxy_setting_applies_to_the_next_request(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """pi's ``httpProxy`` setting lands in HTTP(S)_PROXY, read again for every request."""
    from pi_coding_agent.coding.resources.provider_settings import apply_http_proxy
    from pi_coding_agent.coding.resources.settings import Settings

    async with raw_server(sse_answer(b"data: via setting\n\n")) as proxy:
        (tmp_path / "settings.json").write_text(json.dumps({"httpProxy": proxy.url.removesuffix("/v1/stream")}))
        apply_http_proxy(Settings.load(tmp_path, tmp_path, False))
        assert await collect("http://provider.invalid/v1/chat") == ["via setting"]
        assert proxy.heads[0].startswith(b"POST http://provider.invalid/v1/chat HTTP/1.1\r\n")


async def test_deflate_bodies_zlib_wrapped_or_raw_are_decoded() -> None:
    import zlib

    raw = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    bodies = [zlib.compress(b"data: wrapped\n\n"), raw.compress(b"data: raw\n\n") + raw.flush()]

    async def handler(server: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for body in bodies:
            await server.read_request(reader)
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-encoding: deflate\r\n"
                         b"content-length: %d\r\n\r\n%s" % (len(body), body))
            await writer.drain()

    async with raw_server(handler) as server:
        assert await collect(server.url) == ["wrapped"]
        assert await collect(server.url) == ["raw"]
        assert b"accept-encoding: gzip, deflate" in server.heads[0].lower()


def redirect_to(location: str) -> Callable[[RawServer, asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]:
    async def handler(server: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while head := await server.read_request(reader):
            if b"/moved" in head.split(b"\r\n")[0]:
                writer.write(SSE_HEAD + chunk(b"data: moved here\n\n") + b"0\r\n\r\n")
            else:
                writer.write(b"HTTP/1.1 307 Temporary Redirect\r\nlocation: %s\r\ncontent-length: 0\r\n\r\n"
                             % location.encode())
            await writer.drain()
    return handler


async def test_a_redirect_to_another_host_is_refused_by_name() -> None:
    async with raw_server(redirect_to("https://elsewhere.example/v1/stream")) as server:
        with pytest.raises(ProviderError) as info:
            await collect(server.url)
        assert "307 redirect to host elsewhere.example" in str(info.value) and "not followed" in str(info.value)
        assert "Content-Type" not in str(info.value) and len(server.heads) == 1


async def test_a_307_on_the_same_origin_is_followed_with_its_body() -> None:
    async with raw_server(redirect_to("/v1/moved")) as server:
        assert await collect(server.url) == ["moved here"]
        assert [head.split(b"\r\n")[0] for head in server.heads] == [b"POST /v1/stream HTTP/1.1",
                                                                      b"POST /v1/moved HTTP/1.1"]


async def test_the_idle_timeout_covers_the_wait_for_headers() -> None:
    async def handler(server: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await server.read_request(reader)
        await asyncio.sleep(5)

    async with raw_server(handler) as server:
        with pytest.raises(ProviderError, match=r"^Request timed out\.$"):
            await collect(server.url, idle_timeout_s=0.3)


# The peak is VmHWM, this process's own: ru_maxrss also counts the forking parent's pages (a pytest
# worker past 600 MiB after the big-conversation tests), which made the bound depend on the test order.
BOMB_CLIENT = """
import asyncio, sys
from contextlib import aclosing
from pi_coding_agent.ai.transport.http import sse_events
from pi_coding_agent.ai.stream import ProviderError, StreamOptions

async def main():
    try:
        async with aclosing(sse_events(sys.argv[1], {}, {}, StreamOptions())) as events:
            async for _ in events:
                pass
        print("no error")
    except ProviderError as exc:
        print(exc)
    with open("/proc/self/status") as status:
        print(next(int(line.split()[1]) // 1024 for line in status if line.startswith("VmHWM:")))

asyncio.run(main())
"""


@pytest.mark.slow
async def test_a_gzip_bomb_of_one_line_fails_the_stream_with_bounded_memory() -> None:
    """4 GiB of one line, 4 MiB on the wire: the stream fails at the line bound and the process's
    peak RSS stays far below what the line would take."""
    import zlib

    block = b"x" * (1 << 20)
    packer = zlib.compressobj(1, wbits=zlib.MAX_WBITS | 16)
    prefix = packer.compress(b"data: ") + packer.flush(zlib.Z_SYNC_FLUSH)
    packed_block = packer.compress(block) + packer.flush(zlib.Z_SYNC_FLUSH)

    async def handler(server: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await server.read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-encoding: gzip\r\n"
                     b"transfer-encoding: chunked\r\n\r\n" + chunk(prefix))
        for _ in range(4096):  # a deflate stream repeating one compressed block: 4 GiB of "x" expanded
            writer.write(chunk(packed_block))
            await writer.drain()

    async with raw_server(handler) as server:
        from tests.support.rpc_helpers import PYTHON

        process = await asyncio.create_subprocess_exec(PYTHON, "-c", BOMB_CLIENT, server.url,
                                                       stdout=asyncio.subprocess.PIPE)
        out, _ = await asyncio.wait_for(process.communicate(), 120)
    message, peak_mib = out.decode().strip().splitlines()
    assert message.startswith("Stream refused: a server-sent event line is longer than 67108864 bytes")
    assert int(peak_mib) < 500, f"peak RSS {peak_mib} MiB"


def test_each_event_loop_has_its_own_session(fake_llm) -> None:
    """``asyncio.run`` per call (an SDK user's program): a loop's session (and pool) stays with it,
    is closed when that loop shuts down, and the entries of closed loops are dropped."""
    fake_llm.add({"content": [{"type": "text", "text": "a"}]}, {"content": [{"type": "text", "text": "b"}]})
    url = f"{fake_llm.url}/v1/chat/completions"

    async def one_request() -> list[asyncio.AbstractEventLoop]:
        await collect(url)
        return list(aio._sessions)

    first = asyncio.run(one_request())
    first_session = aio._sessions[first[-1]][0]
    assert first_session.closed  # asyncio.run closed it with its loop
    second = asyncio.run(one_request())
    assert len(second) == 1 and first[-1] not in second


@pytest.mark.slow
async def test_an_error_answer_is_read_only_up_to_its_bound() -> None:
    """A 500 whose gzip body expands to 256 MiB: the error text comes from its first MiB, truncated."""
    import zlib

    packer = zlib.compressobj(1, wbits=zlib.MAX_WBITS | 16)
    body = b"".join(packer.compress(b"e" * (1 << 20)) for _ in range(256)) + packer.flush()

    async def handler(server: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await server.read_request(reader)
        writer.write(b"HTTP/1.1 500 Internal Server Error\r\ncontent-encoding: gzip\r\ncontent-length: %d\r\n\r\n%s"
                     % (len(body), body))
        await writer.drain()

    async with raw_server(handler) as server:
        with pytest.raises(ProviderError) as info:
            await collect(server.url)
        assert str(info.value).startswith("500 eeee") and len(str(info.value)) < (1 << 20) + 100
        assert info.value.status == 500
