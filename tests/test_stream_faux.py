"""The stream wrapper over the in-process faux API: events, final message, abort."""

import asyncio
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
