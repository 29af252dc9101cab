"""examples/web_chat.py for real: the app served by uvicorn, two headless Chromium tabs, one session each.

Each tab opens the page with a first prompt in its URL; the page sends it over the WebSocket and
draws the streamed events; the test reads the tabs' DOM over the DevTools protocol. Without the
``chromium`` binary the test skips.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.rpc_helpers import ROOT

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install -y chromium)")


def load_example() -> Any:
    spec = importlib.util.spec_from_file_location("web_chat", ROOT / "examples" / "web_chat.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, list[Any]]]:
    """The example app on 127.0.0.1 (a free port) in a thread of its own; yields its URL and its sessions."""
    import uvicorn

    from pi_coding_agent.coding.sdk import session as session_module

    example = load_example()
    app = example.create_app(cwd=tmp_path, agent_dir=tmp_path, provider="faux", model="faux-1", in_memory=True,
                             load_resources=False, tools=["ls"],
                             faux_script=[{"content": [{"type": "toolCall", "name": "ls", "arguments": {}}]},
                                          {"content": [{"type": "text", "text": "listed"}]}])
    started: list[Any] = []
    configure = session_module.Session.configure

    def record(self: Any, *args: Any) -> None:
        started.append(self)
        configure(self, *args)

    session_module.Session.configure = record  # type: ignore[method-assign]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=asyncio.run, args=(server.serve(),), daemon=True)
    thread.start()
    try:
        while not server.started:
            threading.Event().wait(0.02)
        port = server.servers[0].sockets[0].getsockname()[1]
        yield f"http://127.0.0.1:{port}", started
    finally:
        server.should_exit = True
        thread.join(30)
        session_module.Session.configure = configure  # type: ignore[method-assign]


class Browser:
    """Headless Chromium driven over the DevTools protocol (CDP): tabs opened and read from the test."""

    def __init__(self, process: asyncio.subprocess.Process, socket: Any) -> None:
        self.process = process
        self.socket = socket
        self._ids = iter(range(1, 1_000_000))
        self._turn = asyncio.Lock()  # one command at a time on the socket

    @classmethod
    async def start(cls, profile: Path) -> Browser:
        from websockets.asyncio.client import connect

        assert CHROMIUM is not None
        process = await asyncio.create_subprocess_exec(
            CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            f"--user-data-dir={profile}", "--remote-debugging-port=0", "about:blank",
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
            env={**os.environ, "HOME": str(profile)})
        assert process.stderr is not None
        while b"DevTools listening on " not in (line := await asyncio.wait_for(process.stderr.readline(), 60)):
            assert line, "chromium exited before listening"
        return cls(process, await connect(line.decode().split(" on ", 1)[1].strip(), max_size=None))

    async def call(self, method: str, session: str | None = None, **params: Any) -> Any:
        ident = next(self._ids)
        async with self._turn:
            await self.socket.send(json.dumps({"id": ident, "method": method, "params": params,
                                               **({"sessionId": session} if session else {})}))
            while (reply := json.loads(await self.socket.recv())).get("id") != ident:
                pass  # events of the tabs: not needed here
        assert "error" not in reply, reply
        return reply["result"]

    async def open(self, url: str) -> str:
        """A new tab on ``url``; returns its CDP session."""
        target = (await self.call("Target.createTarget", url=url))["targetId"]
        attached: str = (await self.call("Target.attachToTarget", targetId=target, flatten=True))["sessionId"]
        return attached

    async def evaluate(self, tab: str, expression: str) -> Any:
        return (await self.call("Runtime.evaluate", tab, expression=expression, returnByValue=True))["result"]["value"]

    async def close(self) -> None:
        await self.socket.close()
        self.process.kill()
        await self.process.wait()


async def settled_log(browser: Browser, tab: str) -> list[list[str]]:
    """The tab's chat lines ([class, text]) once its first run has settled (polled: no timing assumed)."""
    while not await browser.evaluate(tab, "document.querySelectorAll('#log .settled').length"):
        await asyncio.sleep(0.05)
    lines: list[list[str]] = await browser.evaluate(
        tab, "[...document.querySelectorAll('#log div')].map((d) => [d.className, d.textContent])")
    return lines


async def test_each_tab_chats_with_its_own_session(served: tuple[str, list[Any]], tmp_path: Path) -> None:
    url, sessions = served
    browser = await Browser.start(tmp_path / "profile")
    try:
        tabs = [await browser.open(f"{url}/?prompt=hello"), await browser.open(f"{url}/?prompt=again")]
        first, second = await asyncio.wait_for(asyncio.gather(*(settled_log(browser, tab) for tab in tabs)), 120)
        expected_tail = [["tool", "ls {}"], ["assistant", "listed"], ["settled", ""]]
        assert first == [["user", "hello"], *expected_tail]
        assert second == [["user", "again"], *expected_tail]  # its own session, its script from the start
    finally:
        await browser.close()
    assert len(sessions) == 2
    for _ in range(200):  # the tabs are gone: each session is shut down with its socket
        if all(s.closed for s in sessions):
            break
        await asyncio.sleep(0.05)
    assert all(s.closed for s in sessions)
