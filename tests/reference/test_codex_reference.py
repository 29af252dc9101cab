"""Side by side with the reference pi 1.6.0: the Codex WebSocket handshake and frames for two turns."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli_sides import needs_reference, rpc_turns
from tests.support.fakes.codex_server import FakeCodexServer, codex_token

# what Node's WebSocket client adds on its own (not pi's choice) and what differs by nature
RUNTIME_HEADERS = {"accept", "accept-language", "sec-fetch-mode", "pragma", "cache-control", "accept-encoding",
                   "host", "sec-websocket-key", "connection"}


def run_prompts(kind: str, home: Path, base_url: str, prompts: list[str | dict[str, Any]], settings: dict[str, Any],
                model: str = "gpt-5.5", *extra: str) -> None:
    """``pi --mode rpc`` (ours or the reference) signed in to ChatGPT, one prompt per finished turn (a
    dict is another command, sent as it is)."""
    agent = home / "agent"
    agent.mkdir(parents=True)
    (agent / "models.json").write_text(json.dumps({"providers": {"openai-codex": {"baseUrl": base_url}}}))
    (agent / "settings.json").write_text(json.dumps(settings))
    credential = {"type": "oauth", "access": codex_token("acct-side"), "refresh": "unused",
                  "expires": int(time.time() * 1000) + 3_600_000, "accountId": "acct-side"}
    (agent / "auth.json").write_text(json.dumps({"openai-codex": credential}))
    (agent / "auth.json").chmod(0o600)
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "PI_CODING_AGENT_DIR": str(agent), "PI_OFFLINE": "1"}
    rpc_turns(kind, ["--provider", "openai-codex", "--model", model, "--no-session", *extra], env, home,
              [{"id": str(index), **({"type": "prompt", "message": text} if isinstance(text, str) else text)}
               for index, text in enumerate(prompts)])


def two_turns(kind: str, home: Path) -> dict[str, Any]:
    with FakeCodexServer() as server:
        server.add({"content": [{"type": "text", "text": "one"}], "id": "resp_1"},
                   {"content": [{"type": "text", "text": "two"}], "id": "resp_2"})
        run_prompts(kind, home, f"{server.url}/backend-api", ["hi", "again"], {})
        return {"handshakes": server.handshakes, "frames": server.frames}


@needs_reference
@pytest.mark.timeout(180)
def test_codex_websocket_wire_matches_the_reference(tmp_path: Path) -> None:
    ours, theirs = two_turns("ours", tmp_path / "ours"), two_turns("reference", tmp_path / "reference")
    assert len(ours["handshakes"]) == len(theirs["handshakes"]) == 1  # one socket for both turns
    mine, ref = ours["handshakes"][0], theirs["handshakes"][0]
    assert mine["path"] == ref["path"] == "/backend-api/codex/responses"
    assert set(mine["headers"]) - RUNTIME_HEADERS == set(ref["headers"]) - RUNTIME_HEADERS
    for name in ("authorization", "chatgpt-account-id", "openai-beta", "originator", "sec-websocket-extensions"):
        assert mine["headers"][name] == ref["headers"][name], name
    for side in (mine, ref):  # the request id is the session's
        assert side["headers"]["session-id"] == side["headers"]["x-client-request-id"]
    assert [f["type"] for f in ours["frames"]] == [f["type"] for f in theirs["frames"]] == ["response.create"] * 2
    first, second = ours["frames"]
    ref_first, ref_second = theirs["frames"]
    assert second["previous_response_id"] == ref_second["previous_response_id"] == "resp_1"
    assert "previous_response_id" not in first and "previous_response_id" not in ref_first
    user_items = [[i for i in f["input"] if i.get("role") == "user"] for f in (second, ref_second)]
    assert user_items[0] == user_items[1] and len(user_items[0]) == 1
    shared = ("model", "store", "stream", "text", "include", "tool_choice", "parallel_tool_calls",
              "max_output_tokens", "reasoning")
    assert {k: first[k] for k in shared} == {k: ref_first[k] for k in shared}
    assert first["prompt_cache_key"] == mine["headers"]["session-id"]


@needs_reference
@pytest.mark.timeout(180)
def test_codex_sse_transport_body_is_zstd_like_the_reference(tmp_path: Path, fake_llm) -> None:
    fake_llm.add({"content": [{"type": "text", "text": "a"}]}, {"content": [{"type": "text", "text": "b"}]})
    for kind in ("ours", "reference"):
        run_prompts(kind, tmp_path / kind, f"{fake_llm.url}/backend-api", ["hi"], {"transport": "sse"})
    ours, theirs = fake_llm.requests
    for name in ("content-encoding", "content-type", "accept", "openai-beta", "originator", "chatgpt-account-id"):
        assert ours["headers"][name] == theirs["headers"][name], name
    assert ours["headers"]["content-encoding"] == "zstd" and ours["path"] == theirs["path"]
    assert isinstance(ours["body"], dict) and ours["body"]["model"] == theirs["body"]["model"] == "gpt-5.5"


def effort_change(kind: str, home: Path) -> list[dict[str, Any]]:
    """gpt-6-luna (efforts as ``configuration_update`` items) at thinking low: a prompt answered after a
    bash call, the level raised to high, a second prompt. The frames the socket received."""
    with FakeCodexServer() as server:
        call = {"type": "toolCall", "id": "call_1", "name": "bash", "arguments": {"command": "echo hi"}}
        server.add({"content": [{"type": "thinking", "thinking": "plan", "signature": "enc-1"}, call], "id": "resp_1"},
                   {"content": [{"type": "text", "text": "ran"}], "id": "resp_2"},
                   {"content": [{"type": "text", "text": "two"}], "id": "resp_3"})
        run_prompts(kind, home, f"{server.url}/backend-api",
                    ["hi", {"type": "set_thinking_level", "level": "high"}, "again"], {}, "gpt-6-luna",
                    "--thinking", "low")
        return server.frames


def _continuation(frame: dict[str, Any]) -> dict[str, Any]:
    return {"previous": frame.get("previous_response_id"), "reasoning": frame.get("reasoning"),
            "items": [item.get("type") or item["role"] for item in frame["input"]],
            "updates": [item["reasoning"] for item in frame["input"] if item.get("type") == "configuration_update"]}


def test_socket_continuations_carry_the_effort_updates(tmp_path: Path) -> None:
    full, after_tool, raised = (_continuation(frame) for frame in effort_change("ours", tmp_path))
    assert full["previous"] is None and full["updates"] == [{"effort": "low"}]
    assert full["reasoning"] == after_tool["reasoning"] == raised["reasoning"] == {"effort": "medium", "summary": "auto"}
    # only the new items travel, the turn's effort closing them, as over SSE
    assert after_tool == {**after_tool, "previous": "resp_1", "items": ["function_call_output", "configuration_update"],
                          "updates": [{"effort": "low"}]}
    assert raised == {**raised, "previous": "resp_2", "items": ["user", "configuration_update"],
                      "updates": [{"effort": "high"}]}


@needs_reference
@pytest.mark.timeout(180)
def test_socket_continuations_with_effort_updates_match_the_reference(tmp_path: Path) -> None:
    ours = [_continuation(frame) for frame in effort_change("ours", tmp_path / "ours")]
    reference = [_continuation(frame) for frame in effort_change("reference", tmp_path / "reference")]
    assert ours == reference
