"""TLS fails closed: aiohttp is imported without the CA loads of its two default contexts, so every
https:// request must carry the process's own verifying context (``aio.tls_context``).

Run in a fresh interpreter, where aiohttp is first imported the way the agent imports it: against a
local TLS server whose self-signed CA is trusted only through ``SSL_CERT_FILE``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support.fakes.tls_proxy import make_certificates
from tests.support.rpc_helpers import PYTHON

CLIENT = """
import asyncio, sys
from pi_coding_agent.ai.transport import aio

async def main(url):
    try:
        async with aio.open_response(url, {}, b"x", 10, 10) as response:
            print("ours", response.status_code, (await response.aread()).decode())
    except Exception as exc:
        print("ours failed", exc)
    try:  # aiohttp's own default context (ssl=True): what a request without ours would get
        async with aio.session().post(url, data=b"x") as response:
            print("default", response.status)
    except Exception as exc:
        print("default failed", exc)

asyncio.run(main(sys.argv[1]))
"""


@contextlib.asynccontextmanager
async def tls_server(tmp_path: Path) -> AsyncIterator[tuple[str, Path]]:
    """An HTTPS server on 127.0.0.1 answering ``ok``; its URL and the CA that signed its certificate."""
    ca, leaf, key = make_certificates(tmp_path, "127.0.0.1")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(leaf, key)

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
            head = await reader.readuntil(b"\r\n\r\n")
            await reader.readexactly(int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0]))
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok")
            await writer.drain()
        writer.close()

    listener = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=context)
    async with listener:
        yield f"https://127.0.0.1:{listener.sockets[0].getsockname()[1]}/v1", ca


async def run_client(url: str, cert_file: Path | None) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("SSL_CERT_FILE", "SSL_CERT_DIR") and "PROXY" not in k.upper()}
    if cert_file is not None:
        env["SSL_CERT_FILE"] = str(cert_file)
    proc = await asyncio.create_subprocess_exec(PYTHON, "-c", CLIENT, url, env=env, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()[-2000:]
    return out.decode().splitlines()


@pytest.mark.slow
async def test_an_untrusted_self_signed_certificate_is_refused(tmp_path: Path) -> None:
    async with tls_server(tmp_path) as (url, _ca):
        ours, default = await run_client(url, None)
    assert ours.startswith("ours failed") and "CERTIFICATE_VERIFY_FAILED" in ours
    assert default.startswith("default failed") and "CERTIFICATE_VERIFY_FAILED" in default


@pytest.mark.slow
async def test_trust_from_ssl_cert_file_reaches_our_context_and_never_aiohttps_default(tmp_path: Path) -> None:
    """The CA trusted by SSL_CERT_FILE: our request verifies and goes through; aiohttp's default
    context, which would have loaded that same trust at import, has none and refuses (fail closed)."""
    async with tls_server(tmp_path) as (url, ca):
        ours, default = await run_client(url, ca)
    assert ours == "ours 200 ok"
    assert default.startswith("default failed") and "CERTIFICATE_VERIFY_FAILED" in default


@pytest.mark.parametrize("url", ["http://127.0.0.1:9/v1", "https://127.0.0.1:9/v1"])
def test_the_ssl_argument_is_our_context_wherever_tls_is_spoken(url: str) -> None:
    from pi_coding_agent.ai.transport import aio

    secure = url.startswith("https:")
    assert (aio._ssl_for(url, None) is aio.tls_context()) is secure
    assert aio._ssl_for(url, "https://proxy.invalid:3128") is aio.tls_context()
    assert aio._ssl_for("http://127.0.0.1/v1", "http://proxy.invalid:3128") is True
