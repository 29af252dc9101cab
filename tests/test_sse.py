"""The SSE parser behind every streaming adapter: events from raw byte chunks, however they are cut."""

from __future__ import annotations

from pi_coding_agent.ai.providers.sse import ServerSentEvent, SSEParser

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
