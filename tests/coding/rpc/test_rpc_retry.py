"""Auto-retry over real RPC: ``pi --mode rpc`` against the scripted fake server.

Each scenario is checked on our process with the exact record sequence of the reference, then
(when the reference pi 1.6.0 is installed) played against both and compared record by record.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.rpc_compare import (
    Conversation,
    Scenario,
    compare,
    flow,
    is_settled,
    needs_reference,
    only,
    play,
    play_once,
)
from tests.support.run_once import shared_run

FAST = {"retry": {"baseDelayMs": 50}}
SLOW = {"retry": {"baseDelayMs": 60000}}  # a back-off that only an abort ends
OVERLOADED = {"status": 529, "body": {"error": {"type": "overloaded_error", "message": "Overloaded"}}}
UNAVAILABLE = {"status": 503, "body": {"error": {"message": "Service unavailable"}}}
BAD_REQUEST = {"status": 400, "body": {"error": {"message": "bad request"}}}
FINE = {"content": [{"type": "text", "text": "fine"}]}
RETRY_EVENTS = ("auto_retry_start", "auto_retry_end")


FIRST_RUN_HEAD = ["response:prompt", "agent_start", "turn_start", "message_start:system", "message_end:system",
                  "message_start:user", "message_end:user"]


def failed_attempt(stop: str = "error") -> list[str]:
    return [f"message_start:assistant:{stop}", f"message_end:assistant:{stop}", "turn_end", "agent_end"]


RETRY = ["auto_retry_start", "entry_appended", "agent_start", "turn_start"]


# --------------------------------------------------------------------------- scenarios


async def _prompt_once(conv: Conversation) -> None:
    await conv.prompt("hi")


async def _prompt_twice(conv: Conversation) -> None:
    await conv.prompt("hi")
    await conv.prompt("again")


async def _abort_during_back_off(conv: Conversation) -> None:
    await conv.send({"type": "prompt", "message": "hi"})
    await conv.read_until(lambda r: r["type"] == "entry_appended")
    await conv.request({"type": "abort"})


async def _abort_retry_during_back_off(conv: Conversation) -> None:
    await conv.send({"type": "prompt", "message": "hi"})
    await conv.read_until(lambda r: r["type"] == "entry_appended")
    await conv.request({"type": "abort_retry"})
    await conv.read_until(is_settled)
    await conv.request({"type": "get_state"})


async def _disable_then_prompt(conv: Conversation) -> None:
    assert (await conv.request({"type": "set_auto_retry", "enabled": False}))["success"] is True
    await conv.prompt("hi")


SCENARIOS: dict[str, Scenario] = {
    "success_after_529": Scenario([OVERLOADED, FINE], _prompt_once, FAST),
    "exhausted": Scenario([UNAVAILABLE] * 4, _prompt_once, FAST),
    "non_retryable_400": Scenario([BAD_REQUEST], _prompt_once, FAST),
    "mid_stream_disconnect": Scenario(
        [{"content": [{"type": "text", "text": "a reply cut short by the network"}], "chunkSize": 3,
          "cutAfterChunks": 3}, FINE], _prompt_once, FAST),
    "abort_during_back_off": Scenario([UNAVAILABLE], _abort_during_back_off, SLOW),
    "abort_retry": Scenario([UNAVAILABLE], _abort_retry_during_back_off, SLOW),
    "disabled": Scenario([UNAVAILABLE], _disable_then_prompt, FAST),
}


# --------------------------------------------------------------------------- ours, exact sequences


@pytest.mark.slow
async def test_success_after_529_hides_the_failed_attempt(tmp_path: Path) -> None:
    scenario = SCENARIOS["success_after_529"]
    played = await play("ours", Scenario(scenario.script, _prompt_once, scenario.settings, args=()), tmp_path)
    records = played.records
    assert flow(records) == [
        *FIRST_RUN_HEAD, *failed_attempt(), *RETRY,
        "message_start:assistant", "message_end:assistant:stop", "auto_retry_end", "turn_end", "agent_end",
        "agent_settled"]
    error = only(records, "message_end")[2]["message"]
    assert error["errorMessage"] == '529: {"type":"overloaded_error","message":"Overloaded"}'
    assert [r["willRetry"] for r in only(records, "agent_end")] == [True, False]
    start, = only(records, "auto_retry_start")
    assert start == {"type": "auto_retry_start", "attempt": 1, "maxAttempts": 3, "delayMs": 50,
                     "errorMessage": error["errorMessage"]}
    assert only(records, "auto_retry_end") == [{"type": "auto_retry_end", "success": True, "attempt": 1}]
    assert records[-1] == {"type": "agent_settled", "aborted": False}

    # the file keeps the failed reply; a context_edit hides it from the model
    edit = only(records, "entry_appended")[0]["entry"]
    session_file = next(played.workspace.agent_dir.rglob("*.jsonl"))
    entries = [json.loads(line) for line in session_file.read_text().splitlines()]
    failed_entry = next(e for e in entries if e["type"] == "message" and e["message"].get("stopReason") == "error")
    assert edit["type"] == "context_edit" and edit["targetId"] == failed_entry["id"] and edit["replacement"] is None
    assert edit in entries
    first, second = (r["body"]["messages"] for r in played.requests)
    assert [m["role"] for m in second] == [m["role"] for m in first]  # no error assistant message was added
    assert all(m["role"] != "assistant" for m in second)


@pytest.mark.slow
@shared_run("exhausted")
async def test_retries_exhausted_reports_the_final_error(tmp_path: Path) -> None:
    records = (await play_once("ours", SCENARIOS["exhausted"], tmp_path)).records
    assert flow(records) == [*FIRST_RUN_HEAD, *failed_attempt(),
                             *(RETRY + failed_attempt()) * 3, "auto_retry_end", "agent_settled"]
    starts = only(records, "auto_retry_start")
    assert [(s["attempt"], s["maxAttempts"], s["delayMs"]) for s in starts] == [(1, 3, 50), (2, 3, 100), (3, 3, 200)]
    assert [r["willRetry"] for r in only(records, "agent_end")] == [True, True, True, False]
    assert only(records, "auto_retry_end") == [{"type": "auto_retry_end", "success": False, "attempt": 3,
                                                "finalError": '503: {"message":"Service unavailable"}'}]


@pytest.mark.slow
async def test_retry_after_header_sets_the_back_off(tmp_path: Path) -> None:
    """Deliberate difference (docs/rpc.md): a server-sent wait longer than our back-off wins."""
    limited = {"status": 429, "body": {"error": {"message": "Rate limit reached"}}, "headers": {"retry-after": "0.3"}}
    records = (await play("ours", Scenario([limited, FINE], _prompt_once, FAST), tmp_path)).records
    start, = only(records, "auto_retry_start")
    assert start["delayMs"] == 300 and start["errorMessage"] == '429: {"message":"Rate limit reached"}'
    assert only(records, "auto_retry_end") == [{"type": "auto_retry_end", "success": True, "attempt": 1}]


@pytest.mark.slow
@shared_run("non_retryable_400")
async def test_non_retryable_error_ends_the_run(tmp_path: Path) -> None:
    played = await play_once("ours", SCENARIOS["non_retryable_400"], tmp_path)
    assert flow(played.records) == [*FIRST_RUN_HEAD, *failed_attempt(), "agent_settled"]
    assert only(played.records, "agent_end")[0]["willRetry"] is False
    assert len(played.requests) == 1


@pytest.mark.slow
@shared_run("mid_stream_disconnect")
async def test_mid_stream_disconnect_is_retried(tmp_path: Path) -> None:
    played = await play_once("ours", SCENARIOS["mid_stream_disconnect"], tmp_path)
    records = played.records
    assert flow(records) == [
        *FIRST_RUN_HEAD, "message_start:assistant", *failed_attempt()[1:], *RETRY,
        "message_start:assistant", "message_end:assistant:stop", "auto_retry_end", "turn_end", "agent_end",
        "agent_settled"]
    cut = only(records, "message_end")[2]["message"]
    assert cut["stopReason"] == "error" and only(records, "auto_retry_start")[0]["errorMessage"] == cut["errorMessage"]
    assert len(played.requests) == 2


@pytest.mark.slow
@shared_run("abort_during_back_off")
async def test_abort_during_back_off_cancels_the_retry(tmp_path: Path) -> None:
    records = (await play_once("ours", SCENARIOS["abort_during_back_off"], tmp_path)).records
    assert flow(records)[-5:] == ["auto_retry_start", "entry_appended", "auto_retry_end", "agent_settled",
                                  "response:abort"]
    assert only(records, "auto_retry_end") == [{"type": "auto_retry_end", "success": False, "attempt": 1,
                                                "finalError": "Retry cancelled"}]
    assert only(records, "agent_settled") == [{"type": "agent_settled", "aborted": True}]


@pytest.mark.slow
@shared_run("abort_retry")
async def test_abort_retry_ends_the_series_before_answering(tmp_path: Path) -> None:
    played = await play_once("ours", SCENARIOS["abort_retry"], tmp_path)
    records = played.records
    assert flow(records)[-6:] == ["auto_retry_start", "entry_appended", "auto_retry_end", "response:abort_retry",
                                  "agent_settled", "response:get_state"]
    assert only(records, "auto_retry_end")[0]["finalError"] == "Retry cancelled"
    assert only(records, "agent_settled") == [{"type": "agent_settled", "aborted": False}]
    assert records[-1]["data"]["isStreaming"] is False
    assert len(played.requests) == 1


@pytest.mark.slow
@shared_run("disabled")
async def test_auto_retry_off_is_persisted(tmp_path: Path) -> None:
    played = await play_once("ours", SCENARIOS["disabled"], tmp_path)
    assert flow(played.records) == ["response:set_auto_retry", *FIRST_RUN_HEAD, *failed_attempt(), "agent_settled"]
    assert not [r for r in played.records if r["type"] in RETRY_EVENTS]
    assert played.workspace.settings()["retry"] == {"baseDelayMs": 50, "enabled": False}


# --------------------------------------------------------------------------- side by side with pi 1.6.0


@needs_reference
@pytest.mark.parametrize("name", [pytest.param(name, marks=shared_run(name)) for name in SCENARIOS])
async def test_same_records_as_the_reference(name: str, tmp_path: Path) -> None:
    ours, reference = await compare(SCENARIOS[name], tmp_path, once=True)
    assert ours.workspace.settings() == reference.workspace.settings()  # set_auto_retry persists alike



@pytest.mark.slow
async def test_http_idle_timeout_setting_ends_a_stalled_stream(tmp_path: Path) -> None:
    # the server sends its first chunk, then stalls longer than httpIdleTimeoutMs
    stalled = {"content": [{"type": "text", "text": "slow answer " * 4}], "chunkDelayMs": 3000}
    settings = {"httpIdleTimeoutMs": 300, "retry": {"enabled": False}}
    played = await play("ours", Scenario([stalled], _prompt_once, settings, args=()), tmp_path)
    final = only(played.records, "message_end")[-1]["message"]
    assert final["stopReason"] == "error" and "timed out" in final["errorMessage"].lower()
    assert played.records[-1] == {"type": "agent_settled", "aborted": False}
