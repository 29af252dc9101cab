"""``compat.supportsMessageThreads`` on the Anthropic Messages API, and the fine-grained tool-streaming
beta decided from the transcript's current tools.

Every scenario drives the real ``pi --mode rpc`` against the fake Anthropic server and reads the
request bodies and headers it received: the first request of a session creates a thread, each later
one continues it with only the new messages, and the rejections fall back as pi 1.6.0 does (a new
thread, threads off for the session, or the error passed on). Ours alone, then the thread fields of
the requests side by side with the reference pi.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.fakes.llm_server import FakeLLMServer
from tests.support.rpc_compare import MODEL_ID, Conversation, Record, Workspace, needs_reference

THREADS_BETA = "message-threads-2026-08-12"
FINE_GRAINED_BETA = "fine-grained-tool-streaming-2025-05-14"
ON = {"supportsMessageThreads": True}
LONG = "lorem ipsum dolor sit amet " * 20
Drive = Callable[[Conversation], Awaitable[None]]


def reply(text: str, reply_id: str, **extra: Any) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "responseId": reply_id, **extra}


def rejection(status: int, message: str, code: str | None = None) -> dict[str, Any]:
    """An Anthropic error body; thread rejections name their cause in ``error.details.error_code``."""
    error: dict[str, Any] = {"type": "invalid_request_error" if status == 400 else "not_found_error",
                             "message": message}
    if code is not None:
        error["details"] = {"error_code": code}
    return {"status": status, "body": {"type": "error", "error": error}}


async def _prompts(conv: Conversation, *texts: str) -> None:
    for text in texts:
        await conv.prompt(text)


async def three_prompts(conv: Conversation) -> None:
    await _prompts(conv, "one", "two", "three")


async def run(kind: str, root: Path, script: list[dict[str, Any]], drive: Drive = three_prompts,
              compat: dict[str, Any] | None = ON, base_path: str = "/v1", args: tuple[str, ...] = ("--no-session",),
              settings: dict[str, Any] | None = None, extension: str | None = None,
              ) -> tuple[list[dict[str, Any]], list[Record]]:
    """The requests the fake server received and the records of one run; ``base_path`` follows the
    server's address in the provider's ``baseUrl``."""
    with FakeLLMServer() as server:
        server.add(*script)
        workspace = Workspace.create(root / kind, server.url, {"retry": {"baseDelayMs": 50}, **(settings or {})})
        models = json.loads((workspace.agent_dir / "models.json").read_text())
        provider = models["providers"]["fake"]
        provider.update(api="anthropic-messages", baseUrl=server.url + base_path)
        model = provider["models"][0]
        if compat is not None:
            model["compat"] = compat
        provider["models"].append({**model, "id": "other-model"})
        (workspace.agent_dir / "models.json").write_text(json.dumps(models))
        extra: tuple[str, ...] = ()
        if extension is not None:
            path = workspace.root / ("tools.py" if kind == "ours" else "tools.ts")
            path.write_text(textwrap.dedent(extension))
            extra = ("-e", str(path))
        proc = await workspace.spawn(kind, *args, *extra)
        conv = Conversation(proc, server, workspace)
        try:
            await drive(conv)
        finally:
            await proc.kill()
        return list(server.requests), conv.records


def betas(request: dict[str, Any]) -> list[str]:
    return [b.strip() for b in request["headers"].get("anthropic-beta", "").split(",") if b.strip()]


def view(request: dict[str, Any]) -> dict[str, Any]:
    """What threads change in a request: the thread field, whether system and tools go along, the
    messages sent (roles and block types) and the betas."""
    body = request["body"]
    blocks = [[b["type"] for b in m["content"]] if isinstance(m["content"], list) else ["string"]
              for m in body["messages"]]
    return {"thread": body.get("thread"), "system": "system" in body, "tools": "tools" in body,
            "roles": [m["role"] for m in body["messages"]], "blocks": blocks,
            "threadsBeta": THREADS_BETA in betas(request), "fineGrained": FINE_GRAINED_BETA in betas(request)}


def threads(requests: list[dict[str, Any]]) -> list[Any]:
    return [r["body"].get("thread") for r in requests]


def diagnostics(records: list[Record]) -> list[list[tuple[str, Any]]]:
    """Each final assistant message's diagnostics (type and details)."""
    return [[(d["type"], d.get("details")) for d in r["message"].get("diagnostics") or []]
            for r in records if r["type"] == "message_end" and r["message"]["role"] == "assistant"]


CREATE = {"type": "create"}


def cont(reply_id: str) -> dict[str, Any]:
    return {"type": "continue", "previous_message_id": reply_id}


# --------------------------------------------------------------------------- ours alone


async def test_first_request_creates_and_later_ones_continue_with_the_new_messages(tmp_path: Path) -> None:
    tool_call = {"content": [{"type": "toolCall", "id": "toolu_1", "name": "bash", "arguments": {"command": "echo hi"}}],
                 "responseId": "msg_1"}
    requests, _ = await run("ours", tmp_path, [tool_call, reply("done", "msg_2"), reply("two", "msg_3"),
                                               reply("three", "msg_4")])
    assert threads(requests) == [CREATE, cont("msg_1"), cont("msg_2"), cont("msg_3")]
    first, after_tool, second = (view(r) for r in requests[:3])
    assert first["system"] and first["tools"] and first["threadsBeta"]
    assert after_tool == {**after_tool, "system": False, "tools": False, "roles": ["user"], "blocks": [["tool_result"]]}
    assert second["roles"] == ["user"] and second["threadsBeta"]
    # the continue holds the request's other fields; the cache marker sits on the one new message
    body = requests[2]["body"]
    assert body["model"] == MODEL_ID and body["stream"] is True and "max_tokens" in body
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "two",
                                                              "cache_control": {"type": "ephemeral"}}]}]


@pytest.mark.parametrize(("compat", "base_path", "on"), [
    (None, "/api.anthropic.com", True),  # the default: on for Anthropic's own endpoint
    (None, "/v1", False),  # any other endpoint (a gateway may drop the field)
    ({"supportsMessageThreads": False}, "/api.anthropic.com", False),
])
async def test_default_follows_the_endpoint(tmp_path: Path, compat: Any, base_path: str, on: bool) -> None:
    requests, _ = await run("ours", tmp_path, [reply("one", "msg_1"), reply("two", "msg_2")],
                            lambda conv: _prompts(conv, "one", "two"), compat, base_path)
    assert threads(requests) == ([CREATE, cont("msg_1")] if on else [None, None])
    assert [THREADS_BETA in betas(r) for r in requests] == [on, on]


async def test_expired_thread_starts_a_new_one(tmp_path: Path) -> None:
    script = [reply("one", "msg_1"), rejection(404, "thread not found", "thread_not_found"),
              reply("two", "msg_2"), reply("three", "msg_3")]
    requests, records = await run("ours", tmp_path, script)
    assert threads(requests) == [CREATE, cont("msg_1"), CREATE, cont("msg_2")]
    assert view(requests[2])["roles"] == ["user", "assistant", "user"] and view(requests[2])["system"]
    assert diagnostics(records) == [[], [("anthropic_thread_fallback", {"reason": "thread_not_found"})], []]


@pytest.mark.parametrize(("error", "reason"), [
    (rejection(400, "this request cannot use a thread", "thread_unsupported_request"), "thread_unsupported_request"),
    (rejection(400, "thread: Extra inputs are not permitted"), "400"),  # an endpoint without the field
])
async def test_endpoint_without_threads_turns_them_off_for_the_session(tmp_path: Path, error: Any,
                                                                       reason: str) -> None:
    requests, records = await run("ours", tmp_path, [error, reply("one", "msg_1"), reply("two", "msg_2"),
                                                     reply("three", "msg_3")])
    assert threads(requests) == [CREATE, None, None, None]
    assert all(THREADS_BETA in betas(r) for r in requests)  # the beta stays: the plain resend was taken with it
    assert view(requests[3])["roles"] == ["user", "assistant", "user", "assistant", "user"]
    assert diagnostics(records) == [[("anthropic_thread_fallback", {"reason": reason})], [], []]


async def test_other_rejections_are_passed_on(tmp_path: Path) -> None:
    script = [reply("one", "msg_1"), rejection(400, "messages.1: bad block"), reply("three", "msg_3")]
    requests, records = await run("ours", tmp_path, script)
    assert threads(requests) == [CREATE, cont("msg_1"), CREATE]  # no resend; the consumed reply is not continued
    errors = [r["message"].get("errorMessage") for r in records
              if r["type"] == "message_end" and r["message"]["role"] == "assistant"]
    assert "messages.1: bad block" in (errors[1] or "") and diagnostics(records)[1] == []


async def _retried_then_aborted(conv: Conversation) -> None:
    await _prompts(conv, "one", "two")  # the continue is overloaded; the retry cannot continue again
    await conv.send({"type": "prompt", "message": "slow"})
    await conv.read_until(lambda r: r["type"] == "message_update"
                          and r["assistantMessageEvent"]["type"] == "text_delta")
    await conv.send({"type": "abort"})  # its response may come before or after the run settles
    await conv.read_until(lambda r: r["type"] == "agent_settled")
    await conv.prompt("four")


RETRIED_THEN_ABORTED = [reply("one", "msg_1"), {"status": 529}, reply("two", "msg_2"),
                        {**reply(LONG, "msg_slow"), "chunkSize": 4, "chunkDelayMs": 50}, reply("four", "msg_4")]


@pytest.mark.slow
async def test_retried_and_aborted_answers_start_new_threads(tmp_path: Path) -> None:
    requests, _ = await run("ours", tmp_path, RETRIED_THEN_ABORTED, _retried_then_aborted)
    assert threads(requests) == [CREATE, cont("msg_1"), CREATE, cont("msg_2"), CREATE]


async def _compact_then_switch(conv: Conversation) -> None:
    await _prompts(conv, LONG + "1", LONG + "2", LONG + "3")
    await conv.request({"type": "compact"})
    await conv.prompt("after compaction")
    await conv.request({"type": "set_model", "provider": "fake", "modelId": "other-model"})
    await conv.prompt("other model")


COMPACT_THEN_SWITCH = [reply("one", "msg_1"), reply("two", "msg_2"), reply("three", "msg_3"),
                       reply("## Goal\nx", "msg_s"), reply("after", "msg_5"), reply("other", "msg_6")]
COMPACTION = {"compaction": {"keepRecentTokens": 200, "reserveTokens": 16384}}


async def test_model_switch_and_compaction_start_new_threads(tmp_path: Path) -> None:
    requests, _ = await run("ours", tmp_path, COMPACT_THEN_SWITCH, _compact_then_switch, settings=COMPACTION)
    assert threads(requests) == [CREATE, cont("msg_1"), cont("msg_2"), None, CREATE, CREATE]
    summary = requests[3]  # summaries are sent without prompt caching, so without threads
    assert "tools" not in summary["body"] and THREADS_BETA not in betas(summary)
    assert requests[-1]["body"]["model"] == "other-model"


async def _reopened(conv: Conversation) -> None:
    await conv.prompt("one")
    first = (await conv.request({"type": "get_state"}))["data"]["sessionFile"]
    await conv.request({"type": "new_session"})
    await conv.prompt("elsewhere")
    await conv.request({"type": "switch_session", "sessionPath": first})
    await conv.prompt("two")


REOPENED = [reply("one", "msg_1"), reply("b", "msg_b"), reply("two", "msg_2")]


async def test_a_session_opened_again_starts_a_new_thread(tmp_path: Path) -> None:
    requests, _ = await run("ours", tmp_path, REOPENED, _reopened, args=())
    assert threads(requests) == [CREATE, CREATE, CREATE]
    assert view(requests[2])["roles"] == ["user", "assistant", "user"]


NO_TOOLS = {
    "ours": """
def setup(pi):
    pi.register_command("none", handler=lambda args, ctx: pi.set_active_tools([]))
""",
    "reference": """
export default function (pi) {
  pi.registerCommand("none", { handler: async () => { pi.setActiveTools([]); } });
}
""",
}
EAGER_OFF = {"supportsEagerToolInputStreaming": False, "supportsMidConvoSystemMessages": True}


async def _tools_removed(conv: Conversation) -> None:
    await conv.prompt("one")
    await conv.request({"type": "prompt", "message": "/none"})
    await conv.prompt("two")


async def test_fine_grained_beta_follows_the_current_tools(tmp_path: Path) -> None:
    requests, _ = await run("ours", tmp_path, [reply("one", "msg_1"), reply("two", "msg_2")], _tools_removed,
                            EAGER_OFF, extension=NO_TOOLS["ours"])
    assert [(view(r)["fineGrained"], view(r)["tools"]) for r in requests] == [(True, True), (False, False)]


# --------------------------------------------------------------------------- side by side

SCENARIOS: dict[str, tuple[list[dict[str, Any]], Drive, dict[str, Any] | None]] = {
    "continue": ([{"content": [{"type": "toolCall", "id": "toolu_1", "name": "bash", "arguments": {"command": "echo hi"}}],
                   "responseId": "msg_1"}, reply("done", "msg_2"), reply("two", "msg_3"), reply("three", "msg_4")],
                 three_prompts, ON),
    "not found": ([reply("one", "msg_1"), rejection(404, "thread not found", "thread_not_found"), reply("two", "msg_2"),
                   reply("three", "msg_3")], three_prompts, ON),
    "in flight": ([reply("one", "msg_1"), rejection(409, "busy", "thread_continue_in_flight"), reply("two", "msg_2"),
                   reply("three", "msg_3")], three_prompts, ON),
    "unsupported": ([rejection(400, "no threads here", "thread_unsupported_request"), reply("one", "msg_1"),
                     reply("two", "msg_2"), reply("three", "msg_3")], three_prompts, ON),
    "unknown field": ([rejection(400, "thread: Extra inputs are not permitted"), reply("one", "msg_1"),
                       reply("two", "msg_2"), reply("three", "msg_3")], three_prompts, ON),
    "other error": ([reply("one", "msg_1"), rejection(400, "messages.1: bad block"), reply("three", "msg_3")],
                    three_prompts, ON),
    "overloaded": ([reply("one", "msg_1"), {"status": 529}, reply("two", "msg_2"), reply("three", "msg_3")],
                   three_prompts, ON),
    "off": ([reply("one", "msg_1"), reply("two", "msg_2"), reply("three", "msg_3")], three_prompts, None),
}



def _side(requests: list[dict[str, Any]], records: list[Record]) -> dict[str, Any]:
    """The thread fields of every request, the messages of each continue, the answers' diagnostics."""
    return {"requests": [view(r) for r in requests],
            "continued": [r["body"]["messages"] for r in requests if (r["body"].get("thread") or {}).get("type")
                          == "continue"],
            "diagnostics": diagnostics(records),
            "errors": [d["error"]["message"] for r in records if r["type"] == "message_end"
                       for d in r["message"].get("diagnostics") or [] if "error" in d]}


@needs_reference
@pytest.mark.parametrize("case", list(SCENARIOS))
async def test_thread_fields_match_reference(case: str, tmp_path: Path) -> None:
    script, drive, compat = SCENARIOS[case]
    ours = _side(*await run("ours", tmp_path, script, drive, compat))
    reference = _side(*await run("reference", tmp_path, script, drive, compat))
    assert ours == reference


RUNS: dict[str, tuple[list[dict[str, Any]], Drive, dict[str, Any]]] = {
    "retried then aborted": (RETRIED_THEN_ABORTED, _retried_then_aborted, {}),
    "compaction and model switch": (COMPACT_THEN_SWITCH, _compact_then_switch, {"settings": COMPACTION}),
    "session opened again": (REOPENED, _reopened, {"args": ()}),
}


@needs_reference
@pytest.mark.parametrize("case", list(RUNS))
async def test_new_threads_after_interruptions_match_reference(case: str, tmp_path: Path) -> None:
    script, drive, extra = RUNS[case]
    ours, reference = [threads((await run(kind, tmp_path, script, drive, **extra))[0]) for kind in ("ours", "reference")]
    assert ours == reference


@needs_reference
async def test_fine_grained_beta_matches_reference(tmp_path: Path) -> None:
    script = [reply("one", "msg_1"), reply("two", "msg_2")]
    sides = [[view(r) for r in (await run(kind, tmp_path, script, _tools_removed, {**EAGER_OFF, **ON},
                                          extension=NO_TOOLS[kind]))[0]] for kind in ("ours", "reference")]
    assert sides[0] == sides[1]


# --------------------------------------------------------------------------- the adapter alone


def _claude(url: str, **compat: Any) -> Any:
    return {"id": "claude-test", "name": "Claude", "api": "anthropic-messages", "provider": "anthropic",
            "baseUrl": url, "reasoning": False, "input": ["text"], "contextWindow": 200000, "maxTokens": 8000,
            "cost": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75},
            "compat": {"supportsMessageThreads": True, **compat}}


async def _turn(model: Any, messages: list[Any], session: str, **options: Any) -> dict[str, Any]:
    from pi_coding_agent.ai.stream import StreamOptions, complete

    context: Any = {"systemPrompt": options.pop("system", "Be terse."), "messages": messages}
    answer = await complete(model, context, StreamOptions(api_key="k", session_id=session, **options))
    messages.append(answer)
    return dict(answer)


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": 1}


async def test_a_replay_neither_continues_nor_moves_the_thread(fake_llm: FakeLLMServer) -> None:
    """Cache warming repeats the last request: the full request, with the beta, and the next real
    request still continues the thread the replay left alone."""
    fake_llm.add(reply("one", "msg_1"), reply("warm", "msg_w"), reply("two", "msg_2"))
    model, messages = _claude(fake_llm.url), [_user("one")]
    await _turn(model, messages, "replay")
    replay = [*messages[:-1]]
    await _turn(model, replay, "replay", disable_continuation=True, max_tokens=1)
    messages.append(_user("two"))
    await _turn(model, messages, "replay")
    assert threads(fake_llm.requests) == [CREATE, None, cont("msg_1")]
    assert THREADS_BETA in betas(fake_llm.requests[1])


async def test_the_payload_hook_sees_the_full_request(fake_llm: FakeLLMServer) -> None:
    seen: list[dict[str, Any]] = []

    async def hook(body: dict[str, Any]) -> dict[str, Any]:
        seen.append(body)
        return {**body, "metadata": {"user_id": "u1"}}

    fake_llm.add(reply("one", "msg_1"), reply("two", "msg_2"))
    model, messages = _claude(fake_llm.url), [_user("one")]
    await _turn(model, messages, "hook", on_payload=hook)
    messages.append(_user("two"))
    await _turn(model, messages, "hook", on_payload=hook)
    assert ["thread" in body for body in seen] == [False, False] and len(seen[1]["messages"]) == 3
    assert threads(fake_llm.requests) == [CREATE, cont("msg_1")]
    assert fake_llm.requests[1]["body"]["metadata"] == {"user_id": "u1"}


async def test_a_changed_fixed_field_or_a_fallback_answer_starts_a_new_thread(fake_llm: FakeLLMServer) -> None:
    """The system prompt is not sent with a continue, so only the fingerprint notices it changed; an
    answer written by a fallback model is not kept by the server."""
    fake_llm.add(reply("one", "msg_1"), {**reply("two", "msg_2"), "responseModel": "claude-fallback"},
                 reply("three", "msg_3"), reply("four", "msg_4"))
    model, messages = _claude(fake_llm.url), [_user("one")]
    await _turn(model, messages, "fixed")
    messages.append(_user("two"))
    await _turn(model, messages, "fixed", system="Be verbose.")
    messages.append(_user("three"))
    await _turn(model, messages, "fixed", system="Be verbose.")
    messages.append(_user("four"))
    await _turn(model, messages, "fixed", system="Be verbose.")
    assert threads(fake_llm.requests) == [CREATE, CREATE, CREATE, cont("msg_3")]


async def test_no_threads_without_prompt_caching(fake_llm: FakeLLMServer) -> None:
    fake_llm.add(reply("one", "msg_1"), reply("two", "msg_2"))
    model, messages = _claude(fake_llm.url), [_user("one")]
    await _turn(model, messages, "uncached", cache_retention="none")
    messages.append(_user("two"))
    await _turn(model, messages, "uncached", cache_retention="none")
    assert threads(fake_llm.requests) == [None, None]
    assert not any(THREADS_BETA in betas(r) for r in fake_llm.requests)


def test_fingerprint_ignores_moved_cache_markers_and_string_content() -> None:
    from pi_coding_agent.ai.apis.anthropic_threads import fingerprint

    model: Any = _claude("http://127.0.0.1:1")
    body = {"model": "claude-test", "system": [{"type": "text", "text": "s"}]}
    marked = [{"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}]
    assert fingerprint(model, body, None, [{"role": "user", "content": "hi"}]) == fingerprint(model, body, None, marked)
    assert fingerprint(model, body, None, marked) != fingerprint(model, {**body, "system": []}, None, marked)
    assert fingerprint(model, body, None, marked) != fingerprint(model, body, "other-beta", marked)
    result = {"type": "tool_result", "tool_use_id": "t", "content": "out", "is_error": False}
    last = [{"role": "user", "content": [{**result, "cache_control": {"type": "ephemeral"}}]}]
    assert fingerprint(model, body, None, last) == fingerprint(model, body, None, [{"role": "user", "content": [result]}])


def test_state_is_kept_for_at_most_ten_thousand_sessions() -> None:
    from pi_coding_agent.ai.apis import anthropic_threads as threads_module

    threads_module.forget()
    try:
        for index in range(threads_module.MAX_SESSIONS + 1):
            threads_module._remember(f"s{index}", threads_module.OFF)
        assert len(threads_module._sessions) == threads_module.MAX_SESSIONS
        assert "s0" not in threads_module._sessions and f"s{threads_module.MAX_SESSIONS}" in threads_module._sessions
        threads_module._remember("s1", threads_module.OFF)  # updated: now the newest, "s2" goes next
        threads_module._remember("extra", threads_module.OFF)
        assert "s1" in threads_module._sessions and "s2" not in threads_module._sessions
        threads_module.forget("s1")
        assert "s1" not in threads_module._sessions
    finally:
        threads_module.forget()


async def test_provider_retries_resend_the_same_thread_request(fake_llm: FakeLLMServer) -> None:
    """``retry.provider.maxRetries`` repeats a failed request as it was: the continue is sent again."""
    fake_llm.add(reply("one", "msg_1"), {"status": 529, "headers": {"retry-after-ms": "10"}}, reply("two", "msg_2"))
    model, messages = _claude(fake_llm.url), [_user("one")]
    await _turn(model, messages, "provider-retry", max_retries=1)
    messages.append(_user("two"))
    answer = await _turn(model, messages, "provider-retry", max_retries=1)
    assert answer["stopReason"] == "stop" and "diagnostics" not in answer
    assert threads(fake_llm.requests) == [CREATE, cont("msg_1"), cont("msg_1")]
