"""Every recorded provider stream, replayed through its adapter, gives the message the recording holds.

The expected messages in ``tests/support/fixtures/streams/manifest.json`` are written from the recordings
(what the provider sent), not from what an adapter produced. Each recording is served twice: in
one HTTP chunk, and cut into 7-byte chunks so that SSE events straddle chunk boundaries.
"""

from __future__ import annotations

from typing import Any

import pytest

from pi_coding_agent.ai.errors import classify_error
from tests.support.fakes.llm_server import FakeLLMServer
from tests.support.recorded_streams import MANIFEST, STREAMS, replay

MESSAGE_FIELDS = ("stopReason", "rawStopReason", "errorMessage", "responseId", "responseModel")


def _ids(entry: dict[str, Any]) -> str:
    return str(entry["file"]).removesuffix(".txt")


def _content_matches(actual: list[dict[str, Any]], expected: list[dict[str, Any]]) -> None:
    assert len(actual) == len(expected), actual
    for got, want in zip(actual, expected, strict=True):
        if got["type"] == "toolCall" and "id" not in want:  # ids the adapter had to make up
            assert got["id"]
            got = {k: v for k, v in got.items() if k != "id"}
        assert got == want


def _usage_matches(actual: dict[str, Any], expected: dict[str, Any]) -> None:
    for key, value in expected.items():
        if isinstance(value, dict):
            assert {k: actual[key][k] for k in value} == value, key
        else:
            assert actual.get(key, 0) == value, key


def _events_are_consistent(events: list[dict[str, Any]], message: dict[str, Any]) -> None:
    """Each block is announced once, ended once, and its text deltas add up to its final text."""
    content = message["content"]
    starts = [e["contentIndex"] for e in events if e["type"].endswith("_start") and e["type"] != "start"]
    ends = [e["contentIndex"] for e in events if e["type"].endswith("_end")]
    assert sorted(starts) == sorted(ends) == list(range(len(content)))
    for index, block in enumerate(content):
        if block["type"] == "text":
            deltas = "".join(e["delta"] for e in events if e["type"] == "text_delta" and e["contentIndex"] == index)
            assert deltas == block["text"]
    last = events[-1]
    assert last["type"] in ("done", "error")
    assert (last.get("message") or last.get("error")) is message


@pytest.mark.parametrize("chunk_size", [None, 7], ids=["whole", "7-byte-chunks"])
@pytest.mark.parametrize("entry", MANIFEST, ids=_ids)
async def test_recording_gives_the_message_it_holds(entry: dict[str, Any], chunk_size: int | None,
                                                    fake_llm: FakeLLMServer) -> None:
    events, message = await replay(entry, fake_llm, chunk_size)
    expect = entry["expect"]
    for field in MESSAGE_FIELDS:
        if field in expect:
            assert message.get(field) == expect[field], field
    if "errorContains" in expect:
        assert expect["errorContains"] in message.get("errorMessage", "")
    if "errorClass" in expect:
        assert classify_error(message["errorMessage"], message["provider"]) == expect["errorClass"]
    _content_matches(message["content"], expect["content"])
    _usage_matches(message["usage"], expect.get("usage", {}))
    assert [{k: v for k, v in d.items() if k != "timestamp"} for d in message.get("diagnostics", [])] \
        == expect.get("diagnostics", [])
    _events_are_consistent(events, message)


def test_every_recording_is_listed_with_its_source() -> None:
    """No stray recording, and each one names what it follows and under which license."""
    listed = {entry["file"] for entry in MANIFEST}
    on_disk = {str(p.relative_to(STREAMS)) for p in STREAMS.glob("*/*.txt")}
    assert listed == on_disk
    for entry in MANIFEST:
        assert entry["follows"] and entry["license"] and entry["covers"], entry["file"]
