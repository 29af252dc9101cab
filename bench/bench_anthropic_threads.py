"""What Anthropic message threads cost and save per request, in process (no network).

For a transcript of ``--turns`` tool-using turns (each a short reply, a tool call and a
``--result-kib`` tool result), it times what a threads session adds to one request: preparing it
(the prefix fingerprint compared against the last reply's) and recording its reply (the fingerprint
of the new prefix). It also reports the size of the request body sent in full and as a continue.

Usage: .venv/bin/python bench/bench_anthropic_threads.py [--turns 200] [--result-kib 5] [--runs 20]
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import orjson

from pi_coding_agent.ai.apis import anthropic_threads

MODEL: Any = {"provider": "anthropic", "baseUrl": "https://api.anthropic.com", "id": "claude-bench"}


def transcript(turns: int, result_kib: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "start"}]
    for turn in range(turns):
        messages.append({"role": "assistant", "content": [
            {"type": "text", "text": "Looking at the files. " * 8},
            {"type": "tool_use", "id": f"toolu_{turn}", "name": "bash", "input": {"command": f"ls -la dir{turn}"}}]})
        messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{turn}",
                                                      "content": "x" * (result_kib * 1024), "is_error": False}]})
    return messages


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--result-kib", type=int, default=5)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    messages = transcript(args.turns, args.result_kib)
    body = {"model": MODEL["id"], "messages": messages[:-2], "max_tokens": 32000, "stream": True,
            "system": [{"type": "text", "text": "You are a coding agent. " * 400}],
            "tools": [{"name": f"tool{i}", "description": "d" * 300, "input_schema": {"type": "object"}}
                      for i in range(7)]}
    reply = messages[-2:-1]
    prepare, record = [], []
    for _ in range(args.runs):
        anthropic_threads.forget()
        first = anthropic_threads.ThreadedRequest(MODEL, "bench", body, "beta")
        started = time.perf_counter()
        first.record({"responseId": "msg_1"}, reply)  # type: ignore[typeddict-item]
        record.append(time.perf_counter() - started)
        started = time.perf_counter()
        nxt = anthropic_threads.ThreadedRequest(MODEL, "bench", {**body, "messages": messages}, "beta")
        prepare.append(time.perf_counter() - started)
        assert nxt.thread is not None and nxt.thread["thread"]["type"] == "continue"
    full, continued = len(orjson.dumps({**body, "messages": messages})), len(orjson.dumps(nxt.thread))
    print(f"transcript: {len(messages)} messages, full request body {full / 1024:.0f} KiB")
    print(f"continue body: {continued / 1024:.1f} KiB ({continued / full:.2%} of the full body)")
    print(f"prepare (fingerprint compare): best {min(prepare) * 1000:.2f} ms")
    print(f"record (fingerprint of the new prefix): best {min(record) * 1000:.2f} ms")


if __name__ == "__main__":
    main()
