"""The stream wrapper over the in-process faux API: events, final message, abort."""

import asyncio
import contextlib
import json

from pi_coding_agent.ai.abort import AbortSignal
from pi_coding_agent.ai.stream import StreamOptions, stream
from pi_coding_agent.ai.types import Model

FAUX: Model = {
    "id": "faux-1", "name": "Faux", "api": "faux", "provider": "faux", "baseUrl": "", "reasoning": False,
    "input": ["text"], "cost": {"input": 3, "output": 15, "cacheRead": 0, "cacheWrite": 0},
    "contextWindow": 100000, "maxTokens": 8000,
}


def _model_with_script(tmp_path, responses) -> Model:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(responses))
    return {**FAUX, "compat": {"script": str(script)}}


async def test_text_then_done_with_cost(tmp_path):
    model = _model_with_script(tmp_path, [{"content": [{"type": "text", "text": "hello world, how are you"}],
                                            "usage": {"input": 100, "output": 20}}])
    s = stream(model, {"messages": [{"role": "user", "content": "hi", "timestamp": 0}]})
    types = [ev["type"] async for ev in s]
    assert types[0] == "start" and types[1] == "text_start" and types[-2] == "text_end" and types[-1] == "done"
    final = await s.result()
    assert final["content"] == [{"type": "text", "text": "hello world, how are you"}]
    assert final["stopReason"] == "stop"
    assert final["usage"]["totalTokens"] == 120
    assert abs(final["usage"]["cost"]["total"] - 0.0006) < 1e-12


async def test_tool_call_sets_tool_use(tmp_path):
    model = _model_with_script(tmp_path, [{"content": [{"type": "toolCall", "id": "c1", "name": "ls",
                                                         "arguments": {"path": "."}}]}])
    s = stream(model, {"messages": []})
    events = [ev async for ev in s]
    assert events[1] == {"type": "toolcall_start", "contentIndex": 0, "id": "c1", "toolName": "ls"}
    assert events[-2]["toolCall"]["arguments"] == {"path": "."}
    assert (await s.result())["stopReason"] == "toolUse"


async def test_abort_mid_stream_keeps_partial_text(tmp_path):
    model = _model_with_script(tmp_path, [{"content": [{"type": "text", "text": "x" * 400}], "delayMs": 20}])
    signal = AbortSignal()
    s = stream(model, {"messages": []}, StreamOptions(signal=signal))
    seen = []
    async for ev in s:
        seen.append(ev)
        if ev["type"] == "text_delta" and len(seen) == 4:
            asyncio.get_running_loop().call_soon(signal.abort)
    final = await s.result()
    assert final["stopReason"] == "aborted"
    assert final["errorMessage"] == "Request was aborted"
    assert 0 < len(final["content"][0]["text"]) < 400
    assert [e["type"] for e in seen[-2:]] == ["text_end", "error"]


async def test_provider_error_becomes_error_message(tmp_path):
    model = _model_with_script(tmp_path, [{"error": '529: {"type":"overloaded_error","message":"Overloaded"}'}])
    s = stream(model, {"messages": []})
    events = [ev async for ev in s]
    assert events[-1]["type"] == "error"
    final = await s.result()
    assert final["stopReason"] == "error" and final["content"] == []
    assert final["errorMessage"].startswith("529: ")


async def test_after_an_abort_mid_step_the_consuming_task_is_not_left_cancelled(tmp_path):
    """The adapter runs in the consumer's task: the abort's cancellation is taken back, so the task
    goes on (the agent persists the aborted message and emits its events after this)."""
    model = _model_with_script(tmp_path, [{"content": [{"type": "text", "text": "x" * 400}], "delayMs": 20}])
    signal = AbortSignal()
    s = stream(model, {"messages": []}, StreamOptions(signal=signal))
    async for ev in s:
        if ev["type"] == "text_delta":
            asyncio.get_running_loop().call_soon(signal.abort)  # fires while the next step waits
    assert (await s.result())["stopReason"] == "aborted"
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0
    await asyncio.sleep(0.01)  # would raise CancelledError if the abort's cancel were still pending


async def test_a_cancellation_from_outside_is_not_turned_into_an_aborted_message(tmp_path):
    model = _model_with_script(tmp_path, [{"content": [{"type": "text", "text": "x" * 400}], "delayMs": 20}])
    seen: list[str] = []

    async def consume() -> None:
        async for ev in stream(model, {"messages": []}, StreamOptions(signal=AbortSignal())):
            seen.append(ev["type"])

    task = asyncio.create_task(consume())
    while "text_delta" not in seen:
        await asyncio.sleep(0.005)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert task.cancelled() and "error" not in seen


async def test_the_credential_env_is_seen_by_the_adapter_only():
    """``StreamOptions.env`` is set around each adapter step; the consumer's code between events
    (the agent's listeners) does not see it."""
    from pi_coding_agent.ai.auth.provider_env import REQUEST_ENV, env_value
    from pi_coding_agent.ai.stream import set_provider_adapter

    seen_by_adapter: list[str | None] = []

    async def adapter(model, context, options, output):  # type: ignore[no-untyped-def]
        output["content"].append({"type": "text", "text": ""})
        yield {"type": "text_start", "contentIndex": 0}
        for piece in ("a", "b"):
            await asyncio.sleep(0)
            seen_by_adapter.append(env_value("PI_TEST_REGION"))
            output["content"][0]["text"] += piece
            yield {"type": "text_delta", "contentIndex": 0, "delta": piece}

    model: Model = {**FAUX, "provider": "env-probe"}
    set_provider_adapter("env-probe", "faux", adapter)
    try:
        seen_by_consumer = [REQUEST_ENV.get() async for _ in stream(
            model, {"messages": []}, StreamOptions(env={"PI_TEST_REGION": "eu-west-9"}))]
    finally:
        set_provider_adapter("env-probe", "faux", None)
    assert seen_by_adapter == ["eu-west-9", "eu-west-9"]
    assert seen_by_consumer and set(seen_by_consumer) == {None}


async def test_an_adapter_that_swallows_the_abort_still_ends_aborted_and_leaves_the_task_clean():
    from pi_coding_agent.ai.stream import set_provider_adapter

    async def stubborn(model, context, options, output):  # type: ignore[no-untyped-def]
        output["content"].append({"type": "text", "text": ""})
        yield {"type": "text_start", "contentIndex": 0}
        with contextlib.suppress(asyncio.CancelledError):  # a misbehaving adapter goes on regardless
            await asyncio.sleep(10)
        yield {"type": "text_delta", "contentIndex": 0, "delta": "late"}

    signal = AbortSignal()
    set_provider_adapter("stubborn", "faux", stubborn)
    try:
        s = stream({**FAUX, "provider": "stubborn"}, {"messages": []}, StreamOptions(signal=signal))
        async for ev in s:
            if ev["type"] == "text_start":
                asyncio.get_running_loop().call_later(0.01, signal.abort)
    finally:
        set_provider_adapter("stubborn", "faux", None)
    assert (await s.result())["stopReason"] == "aborted"
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0


async def _burst_adapter(model, context, options, output):  # type: ignore[no-untyped-def]
    """One read's worth of events as one list: a text block and three deltas, then an empty list."""
    output["content"].append({"type": "text", "text": "abc"})
    yield [{"type": "text_start", "contentIndex": 0},
           *({"type": "text_delta", "contentIndex": 0, "delta": piece} for piece in "abc")]
    yield []
    yield {"type": "text_end", "contentIndex": 0, "content": "abc"}


async def test_a_list_from_the_adapter_is_handed_on_one_event_at_a_time():
    from pi_coding_agent.ai.stream import set_provider_adapter

    set_provider_adapter("burst", "faux", _burst_adapter)
    try:
        s = stream({**FAUX, "provider": "burst"}, {"messages": []})
        events = [ev async for ev in s]
    finally:
        set_provider_adapter("burst", "faux", None)
    assert [e["type"] for e in events] == ["start", "text_start", "text_delta", "text_delta", "text_delta",
                                           "text_end", "done"]
    assert "".join(e.get("delta", "") for e in events) == "abc"


async def test_an_abort_inside_a_list_lets_the_list_finish_then_ends_the_stream():
    """The consumer aborts on the first delta of a list. The adapter already put the list's text in
    the message, so the list's other deltas still come (what the client saw is the final text);
    the adapter's next step never starts: the block is closed and the stream ends aborted."""
    from pi_coding_agent.ai.stream import set_provider_adapter

    signal = AbortSignal()
    set_provider_adapter("burst", "faux", _burst_adapter)
    try:
        s = stream({**FAUX, "provider": "burst"}, {"messages": []}, StreamOptions(signal=signal))
        seen = []
        async for ev in s:
            seen.append(ev)
            if ev["type"] == "text_delta":
                signal.abort()
    finally:
        set_provider_adapter("burst", "faux", None)
    assert [e["type"] for e in seen] == ["start", "text_start", "text_delta", "text_delta", "text_delta",
                                         "text_end", "error"]
    final = await s.result()
    assert final["stopReason"] == "aborted"
    assert final["content"][0]["text"] == "".join(e["delta"] for e in seen if e["type"] == "text_delta")
