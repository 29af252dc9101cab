"""The SSE parser behind every streaming adapter: events from raw byte chunks, however they are cut."""

from __future__ import annotations

import gzip
from typing import Any

from pi_coding_agent.ai.stream import StreamOptions, complete
from pi_coding_agent.ai.transport.sse import ServerSentEvent, SSEParser
from pi_coding_agent.ai.types import AssistantMessage, Context, Model
from tests.support.fakes.llm_server import FakeLLMServer

Event = tuple[str, str, str, int | None]


def parse(*chunks: bytes) -> list[Event]:
    parser = SSEParser()
    events: list[ServerSentEvent] = []
    for chunk in chunks:
        events += parser.feed(chunk)
    events += parser.close()
    return [(e.event, e.data, e.id, e.retry) for e in events]


STREAM = (b": keep-alive comment\n"
          b"event: message_start\ndata: {\"a\": 1}\n\n"
          b"data:no-space\r\n\r\n"
          b"data: first\rdata:  second\r\r"
          b"id: 7\nretry: 1500\ndata: caf\xc3\xa9 \xe2\x9c\x93\n\n"
          b"event: ping\n\n"
          b"data\n\n"
          b"data: [DONE]\n\n")
EXPECTED: list[Event] = [
    ("message_start", '{"a": 1}', "", None),
    ("message", "no-space", "", None),
    ("message", "first\n second", "", None),
    ("message", "café ✓", "7", 1500),
    ("ping", "", "7", None),
    ("message", "", "7", None),
    ("message", "[DONE]", "7", None),
]


def test_whole_stream_in_one_chunk() -> None:
    assert parse(STREAM) == EXPECTED


def test_every_two_way_cut_gives_the_same_events() -> None:
    """Cuts inside CRLF pairs, inside multi-byte characters and inside field names change nothing."""
    for cut in range(1, len(STREAM)):
        assert parse(STREAM[:cut], STREAM[cut:]) == EXPECTED, cut


def test_one_byte_at_a_time() -> None:
    assert parse(*(STREAM[i : i + 1] for i in range(len(STREAM)))) == EXPECTED


def test_crlf_split_across_chunks_is_one_line_end() -> None:
    assert parse(b"data: a\r", b"\n\r", b"\ndata: b\r\n\r\n") == [("message", "a", "", None), ("message", "b", "", None)]


def test_unterminated_last_event_is_not_dispatched() -> None:
    assert parse(b"data: a\n\ndata: cut off") == [("message", "a", "", None)]
    assert parse(b"data: a\n\ndata: cut off\n") == [("message", "a", "", None)]


def test_a_final_lone_cr_ends_the_last_event() -> None:
    assert parse(b"data: a\r\n\r") == [("message", "a", "", None)]


def test_ignored_lines_and_fields() -> None:
    events = parse(b"id: bad\0id\nretry: soon\nunknown: x\n:comment\ndata: d\n\n")
    assert events == [("message", "d", "", None)]


def test_blank_lines_alone_dispatch_nothing() -> None:
    assert parse(b"\n\n\r\n\r\r") == []


def test_invalid_utf8_is_replaced_not_fatal() -> None:
    assert parse(b"data: \xff\xfe ok\n\n") == [("message", "\ufffd\ufffd ok", "", None)]


def test_one_event_per_chunk_as_providers_send_them() -> None:
    """The one-data-line chunk is the common case; a pending field or line still belongs to it."""
    chunks = [b'data: {"x": 1}\n\n', b"event: e\n", b"data: y\n\n", b"data: partial", b"data: z\n\n", b"data: w\r\n\n"]
    assert parse(*chunks) == [("message", '{"x": 1}', "", None), ("e", "y", "", None),
                              ("message", "partialdata: z", "", None), ("message", "w", "", None)]


# ---- through the real HTTP path of an adapter ----


def _chat_model(url: str) -> Model:
    return {"id": "m", "name": "m", "api": "openai-completions", "provider": "openai", "baseUrl": url + "/v1",
            "reasoning": False, "input": ["text"], "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
            "contextWindow": 100000, "maxTokens": 1000}


CHAT_STREAM = (b'data: {"id":"r1","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"}}]}\n\n'
               b'data: {"id":"r1","choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":"stop"}]}\n\n'
               b"data: [DONE]\n\n")


async def _reply(response: dict[str, Any]) -> AssistantMessage:
    with FakeLLMServer() as server:
        server.add(response)
        context: Context = {"messages": [{"role": "user", "content": "hi", "timestamp": 1}]}
        return await complete(_chat_model(server.url), context, StreamOptions(api_key="k"))


async def test_a_compressed_event_stream_is_decompressed_first() -> None:
    message = await _reply({"raw": gzip.compress(CHAT_STREAM), "rawChunkSize": 7, "headers": {"content-encoding": "gzip"}})
    assert message["stopReason"] == "stop"
    assert message["content"] == [{"type": "text", "text": "Hello"}]


async def test_events_cut_into_tiny_network_chunks() -> None:
    message = await _reply({"raw": CHAT_STREAM, "rawChunkSize": 3})
    assert message["content"] == [{"type": "text", "text": "Hello"}]


async def test_a_2xx_answer_that_is_not_an_event_stream_is_an_error() -> None:
    message = await _reply({"raw": b'{"choices": []}', "contentType": "application/json"})
    assert message["stopReason"] == "error"
    assert message["errorMessage"] == ("Network error: Expected response header Content-Type to contain "
                                       "'text/event-stream', got 'application/json'")
