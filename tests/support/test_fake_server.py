"""The scripted fake LLM server itself: routing, script order, errors, cut streams, request log, CLI."""

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.support.fakes.llm_server import FakeLLMServer

ROOT = Path(__file__).resolve().parents[2]


def _data_lines(text: str) -> list[str]:
    return [line[6:] for line in text.splitlines() if line.startswith("data: ")]


def _completion_text(text: str) -> str:
    chunks = [json.loads(d) for d in _data_lines(text) if d != "[DONE]"]
    return "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])


def test_empty_script_answers_ok(fake_llm):
    r = httpx.post(f"{fake_llm.url}/v1/chat/completions", json={"model": "m", "messages": []})
    assert r.status_code == 200
    assert r.headers["content-type"] == "text/event-stream"
    assert _completion_text(r.text) == "ok"
    assert _data_lines(r.text)[-1] == "[DONE]"


def test_script_is_fifo_across_routes_and_requests_are_logged(fake_llm):
    fake_llm.add({"content": [{"type": "text", "text": "first"}]}, {"content": [{"type": "text", "text": "second"}]})
    r1 = httpx.post(f"{fake_llm.url}/v1/responses", json={"model": "m"}, headers={"X-Test": "yes"})
    r2 = httpx.post(f"{fake_llm.url}/chat/completions", json={"model": "m", "stream_options": {"include_usage": True}})
    deltas = [json.loads(d) for d in _data_lines(r1.text)]
    assert "".join(d["delta"] for d in deltas if d["type"] == "response.output_text.delta") == "first"
    assert "event: response.completed" in r1.text
    assert _completion_text(r2.text) == "second"
    fake_llm.wait_for_requests(2)
    first = fake_llm.requests[0]
    assert first["path"] == "/v1/responses" and first["method"] == "POST"
    assert first["headers"]["x-test"] == "yes" and first["body"] == {"model": "m"}


def test_usage_chunk_only_when_requested(fake_llm):
    fake_llm.add({"content": [{"type": "text", "text": "x"}], "usage": {"input": 10, "output": 2, "cacheRead": 4}})
    fake_llm.add({"content": [{"type": "text", "text": "x"}]})
    with_usage = httpx.post(f"{fake_llm.url}/chat/completions", json={"stream_options": {"include_usage": True}})
    without = httpx.post(f"{fake_llm.url}/chat/completions", json={})
    usage = json.loads(_data_lines(with_usage.text)[-2])
    assert usage["choices"] == []
    assert usage["usage"]["prompt_tokens"] == 14
    assert usage["usage"]["prompt_tokens_details"] == {"cached_tokens": 4}
    assert all('"usage"' not in line for line in _data_lines(without.text))


def test_tool_call_arguments_are_split_and_id_sent_once(fake_llm):
    fake_llm.add({"content": [{"type": "toolCall", "id": "call_9", "name": "bash", "arguments": {"command": "ls -la"}}],
                  "chunkSize": 4})
    r = httpx.post(f"{fake_llm.url}/chat/completions", json={})
    chunks = [json.loads(d) for d in _data_lines(r.text) if d != "[DONE]"]
    calls = [c["choices"][0]["delta"]["tool_calls"][0] for c in chunks if "tool_calls" in c["choices"][0]["delta"]]
    assert calls[0]["id"] == "call_9" and calls[0]["function"]["name"] == "bash"
    assert all("id" not in c for c in calls[1:]) and len(calls) > 3
    assert json.loads("".join(c["function"]["arguments"] for c in calls)) == {"command": "ls -la"}
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


@pytest.mark.slow
def test_error_response_with_default_and_custom_body(fake_llm):
    fake_llm.add({"status": 429, "headers": {"retry-after": "3"}},
                 {"status": 529, "body": {"error": {"type": "overloaded_error", "message": "Overloaded"}}})
    r1 = httpx.post(f"{fake_llm.url}/chat/completions", json={})
    r2 = httpx.post(f"{fake_llm.url}/chat/completions", json={})
    assert r1.status_code == 429 and r1.headers["retry-after"] == "3"
    assert r1.json()["error"]["code"] == "rate_limit_exceeded"
    assert r2.status_code == 529 and r2.json() == {"error": {"type": "overloaded_error", "message": "Overloaded"}}


def test_cut_after_chunks_leaves_an_incomplete_body(fake_llm):
    fake_llm.add({"content": [{"type": "text", "text": "abcdefghijklmnopqrstuvwxyz"}], "chunkSize": 2,
                  "cutAfterChunks": 3})
    with pytest.raises(httpx.RemoteProtocolError):
        httpx.post(f"{fake_llm.url}/chat/completions", json={})
    # the server keeps serving afterwards
    assert _completion_text(httpx.post(f"{fake_llm.url}/chat/completions", json={}).text) == "ok"


def test_unknown_route_is_404(fake_llm):
    assert httpx.post(f"{fake_llm.url}/v1/nothing", json={}).status_code == 404


def test_wait_for_requests_times_out():
    with FakeLLMServer() as server, pytest.raises(TimeoutError):
        server.wait_for_requests(1, timeout=0.05)


@pytest.mark.slow
def test_command_line_serves_a_script(tmp_path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"content": [{"type": "text", "text": "from file"}]}]))
    proc = subprocess.Popen([sys.executable, "-m", "tests.support.fakes.llm_server", "--script", str(script)],
                            cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        assert _completion_text(httpx.post(f"{url}/v1/chat/completions", json={}).text) == "from file"
    finally:
        proc.terminate()
        proc.wait()
