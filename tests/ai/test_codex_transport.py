"""The Codex backend's transports: WebSocket frames (fake server), SSE fallback and zstd bodies."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pi_coding_agent.ai.apis import codex_websocket, openai_codex
from pi_coding_agent.ai.models.catalog import builtin_models
from pi_coding_agent.ai.stream import StreamOptions, stream
from pi_coding_agent.ai.types import Model
from tests.support.fakes.codex_server import FakeCodexServer, codex_token

TOKEN = codex_token("acct-7")
USER = {"role": "user", "content": "hi", "timestamp": 0}


@pytest.fixture(autouse=True)
def fresh_sessions() -> None:
    codex_websocket._sessions.clear()
    openai_codex._sse_sessions.clear()


def _model(url: str) -> Model:
    return {**builtin_models("openai-codex")[0], "baseUrl": f"{url}/backend-api"}  # type: ignore[typeddict-item]


async def _run(model: Model, messages: list[Any] | None = None, **opts: Any) -> Any:
    s = stream(model, {"messages": messages or [USER]}, StreamOptions(api_key=TOKEN, **opts))
    async for _ in s:
        pass
    return await s.result()


@pytest.mark.slow
async def test_websocket_request_frames_and_handshake() -> None:
    with FakeCodexServer() as server:
        server.add({"content": [{"type": "text", "text": "over the socket"}]})
        msg = await _run(_model(server.url), session_id="sess-ws")
    assert msg["content"][0]["text"] == "over the socket", msg.get("errorMessage")
    assert msg["stopReason"] == "stop"
    (handshake,) = server.handshakes
    headers = handshake["headers"]
    assert handshake["path"] == "/backend-api/codex/responses"
    assert headers["authorization"] == f"Bearer {TOKEN}" and headers["chatgpt-account-id"] == "acct-7"
    assert headers["openai-beta"] == "responses_websockets=2026-02-06" and headers["originator"] == "pi"
    assert headers["session-id"] == headers["x-client-request-id"] == "sess-ws"
    assert headers["user-agent"].startswith("pi/1.6.0 (") and "content-type" not in headers
    (frame,) = server.frames
    assert frame["type"] == "response.create" and frame["model"] == _model(server.url)["id"]
    assert frame["store"] is False and frame["prompt_cache_key"] == "sess-ws"
    assert frame["input"][-1]["content"][0]["text"] == "hi"


@pytest.mark.slow
async def test_second_turn_reuses_the_socket_and_sends_only_new_input() -> None:
    with FakeCodexServer() as server:
        server.add({"content": [{"type": "text", "text": "one"}], "id": "resp_one"},
                   {"content": [{"type": "text", "text": "two"}], "id": "resp_two"})
        model = _model(server.url)
        first = await _run(model, session_id="sess-c")
        follow = {"role": "user", "content": "and then?", "timestamp": 1}
        second = await _run(model, [USER, first, follow], session_id="sess-c")
    assert second["content"][0]["text"] == "two", second.get("errorMessage")
    assert len(server.handshakes) == 1  # one connection for both turns
    full, delta = server.frames
    assert "previous_response_id" not in full and delta["previous_response_id"] == "resp_one"
    assert [item.get("role") for item in delta["input"]] == ["user"]
    assert delta["input"][0]["content"][0]["text"] == "and then?"


async def test_session_socket_stays_open_until_shutdown_closes_it() -> None:
    with FakeCodexServer() as server:
        await _run(_model(server.url), session_id="sess-k")
        await asyncio.sleep(0.2)
        assert server.closed == 0 and len(codex_websocket._sessions) == 1  # kept for the next turn
        await codex_websocket.close_all()
        for _ in range(50):
            if server.closed:
                break
            await asyncio.sleep(0.05)
        assert server.closed == 1 and codex_websocket._sessions == {}


@pytest.mark.slow
async def test_websocket_only_transport_sends_the_full_context_each_turn() -> None:
    with FakeCodexServer() as server:
        server.add({"content": [{"type": "text", "text": "one"}], "id": "resp_one"}, {"content": []})
        model = _model(server.url)
        first = await _run(model, session_id="sess-f", transport="websocket")
        await _run(model, [USER, first, {"role": "user", "content": "more", "timestamp": 1}],
                   session_id="sess-f", transport="websocket")
    assert "previous_response_id" not in server.frames[1] and len(server.frames[1]["input"]) == 3


@pytest.mark.slow
async def test_lost_continuation_is_retried_with_the_full_body() -> None:
    missing = {"type": "error", "error": {"code": "previous_response_not_found", "message": "gone"}}
    with FakeCodexServer() as server:
        server.add({"content": [{"type": "text", "text": "one"}], "id": "resp_one"}, {"events": [missing]},
                   {"content": [{"type": "text", "text": "recovered"}]})
        model = _model(server.url)
        first = await _run(model, session_id="sess-r")
        second = await _run(model, [USER, first, {"role": "user", "content": "x", "timestamp": 1}],
                            session_id="sess-r")
    assert second["content"][0]["text"] == "recovered", second.get("errorMessage")
    assert server.frames[1]["previous_response_id"] == "resp_one"
    assert "previous_response_id" not in server.frames[2] and len(server.frames[2]["input"]) == 3


async def test_backend_error_event_is_the_error_and_no_sse_retry() -> None:
    with FakeCodexServer() as server:
        server.add({"events": [{"type": "error", "code": "context_length_exceeded", "message": "too long"}]})
        msg = await _run(_model(server.url), session_id="sess-e")
    assert msg["stopReason"] == "error" and msg["errorMessage"] == "Codex error: too long"
    assert "sess-e" not in openai_codex._sse_sessions


async def test_socket_closed_mid_answer_fails_without_resending() -> None:
    with FakeCodexServer() as server:
        server.add({"content": [{"type": "text", "text": "partial answer"}], "close": 1011, "after": 5,
                    "reason": "upstream died"})
        msg = await _run(_model(server.url), session_id="sess-m")
    assert msg["errorMessage"] == "WebSocket closed 1011 upstream died"
    assert len(server.frames) == 1 and "sess-m" in openai_codex._sse_sessions
    assert msg["diagnostics"][0]["details"]["phase"] == "after_message_stream_start"


async def test_refused_socket_falls_back_to_zstd_sse_and_the_session_stays_there(fake_llm) -> None:
    """The fake LLM server answers the upgrade with 404, as a backend without sockets would."""
    fake_llm.add({"content": [{"type": "text", "text": "over sse"}]}, {"content": [{"type": "text", "text": "again"}]})
    model = _model(fake_llm.url)
    msg = await _run(model, session_id="sess-s")
    assert msg["content"][0]["text"] == "over sse", msg.get("errorMessage")
    request = fake_llm.requests[0]
    assert request["headers"]["content-encoding"] == "zstd" and request["body"]["model"] == model["id"]
    assert request["headers"]["openai-beta"] == "responses=experimental"
    assert "sess-s" in openai_codex._sse_sessions
    (diagnostic,) = msg["diagnostics"]
    assert diagnostic["type"] == "provider_transport_failure" and diagnostic["error"]["message"].endswith("404")
    assert {k: v for k, v in diagnostic["details"].items() if k != "requestBytes"} == {
        "configuredTransport": "auto", "fallbackTransport": "sse", "eventsEmitted": False,
        "phase": "before_message_stream_start"}
    await _run(model, session_id="sess-s")
    assert len(fake_llm.requests) == 2


async def test_sse_transport_never_opens_a_socket(fake_llm) -> None:
    with FakeCodexServer() as server:
        fake_llm.add({"content": [{"type": "text", "text": "plain sse"}]})
        model = {**_model(fake_llm.url)}
        msg = await _run(model, transport="sse")  # type: ignore[arg-type]
    assert msg["content"][0]["text"] == "plain sse" and server.handshakes == []
    assert fake_llm.requests[0]["headers"]["content-encoding"] == "zstd"


@pytest.mark.slow
async def test_connect_timeout_falls_back_to_sse() -> None:
    """A host that never answers the handshake: after the connect timeout the request goes over SSE."""
    with FakeCodexServer(stall=True) as server:
        msg = await _run(_model(server.url), session_id="sess-t", websocket_connect_timeout_s=0.2,
                         idle_timeout_s=0.5)
    # the stalled host answers no SSE either: the fallback's own timeout is the error that remains
    assert msg["stopReason"] == "error" and "WebSocket" not in msg["errorMessage"]
    assert "sess-t" in openai_codex._sse_sessions


def test_zstd_body_round_trips() -> None:
    from backports import zstd

    data = b'{"model":"gpt","input":[]}' * 50
    packed = openai_codex.zstd_compress(data)
    assert packed is not None and len(packed) < len(data) and zstd.decompress(packed) == data


def test_uuid7_is_a_version_7_uuid() -> None:
    import uuid

    value = uuid.UUID(openai_codex.uuid7())
    assert value.version == 7 and value.variant == uuid.RFC_4122
