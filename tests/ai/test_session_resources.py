"""What adapters keep per session is freed when the session ends (``ai/session_resources.py``),
as pi's three session cleanups do: Anthropic threads, strict-tools refusals, Codex sockets."""

from __future__ import annotations

import asyncio

from pi_coding_agent.ai.apis import anthropic_threads, codex_websocket, strict_schema
from pi_coding_agent.ai.session_resources import end_session


def test_strict_refusals_and_threads_of_that_session_only_are_forgotten() -> None:
    for session in ("ended", "kept"):
        strict_schema.mark_over_limits(session)
        anthropic_threads._remember(session, "off")
    end_session("ended")
    assert not strict_schema.over_limits("ended") and strict_schema.over_limits("kept")
    assert "ended" not in anthropic_threads._sessions and "kept" in anthropic_threads._sessions
    end_session(None)  # no session id: nothing to free, nothing fails
    strict_schema.forget("kept")
    anthropic_threads.forget("kept")


async def test_the_ended_session_s_codex_socket_is_closed() -> None:
    import websockets

    closed: dict[str, asyncio.Event] = {}

    async def handler(socket: websockets.ServerConnection) -> None:
        session = socket.request.headers["x-session"] if socket.request else ""
        closed[session] = asyncio.Event()
        await socket.wait_closed()
        closed[session].set()

    async with websockets.serve(handler, "127.0.0.1", 0) as server:
        url = f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}/"
        for session in ("ended", "kept"):
            lease = await codex_websocket.acquire(url, {"x-session": session}, session, "acct", 5.0)
            await lease.release(keep=True)
        end_session("ended")
        await asyncio.wait_for(closed["ended"].wait(), 5)
        assert not closed["kept"].is_set() and ("kept", "acct") in codex_websocket._sessions
        await codex_websocket.close_all()


def test_an_adapter_another_thread_is_still_importing_is_skipped(tmp_path, monkeypatch) -> None:
    """The warm-up thread imports adapters while the loop serves commands: a session ending then
    meets a module in ``sys.modules`` whose functions are not defined yet (``new_session`` failed
    with "partially initialized module ... has no attribute 'forget'")."""
    import importlib
    import sys
    import threading

    from pi_coding_agent.ai import session_resources

    (tmp_path / "slow_adapter.py").write_text(
        "import builtins\nbuiltins.slow_adapter_started.set()\nbuiltins.slow_adapter_go.wait(10)\n"
        "forgotten = []\ndef forget(session_id):\n    forgotten.append(session_id)\n")
    import builtins
    monkeypatch.setattr(builtins, "slow_adapter_started", threading.Event(), raising=False)
    monkeypatch.setattr(builtins, "slow_adapter_go", threading.Event(), raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(session_resources, "_CLEANUPS", (("slow_adapter", "forget"),))
    importer = threading.Thread(target=importlib.import_module, args=("slow_adapter",))
    importer.start()
    try:
        assert builtins.slow_adapter_started.wait(10) and "slow_adapter" in sys.modules
        end_session("while-importing")  # the half-imported module holds nothing yet: skipped
    finally:
        builtins.slow_adapter_go.set()
        importer.join(10)
    end_session("after")
    assert sys.modules.pop("slow_adapter").forgotten == ["after"]
