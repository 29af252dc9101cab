"""prepare_messages: what a transcript becomes before it is sent to one model."""

import copy

from pi_coding_agent.ai.transform import prepare_messages

MODEL = {"id": "m1", "name": "M1", "api": "openai-completions", "provider": "p", "baseUrl": "", "reasoning": True,
         "input": ["text"], "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
         "contextWindow": 1000, "maxTokens": 100}
VISION = {**MODEL, "input": ["text", "image"]}
IMAGE = {"type": "image", "data": "AAAA", "mimeType": "image/png"}


def _user(content):
    return {"role": "user", "content": content, "timestamp": 1}


def _assistant(content, stop="stop", **source):
    return {"role": "assistant", "content": content, "api": "openai-completions", "provider": "p", "model": "m1",
            "usage": {}, "stopReason": stop, "timestamp": 2, **source}


def _result(call_id, text="out"):
    return {"role": "toolResult", "toolCallId": call_id, "toolName": "bash", "content": [{"type": "text", "text": text}],
            "isError": False, "timestamp": 3}


def _call(call_id, **extra):
    return {"type": "toolCall", "id": call_id, "name": "bash", "arguments": {}, **extra}


def test_failed_and_aborted_turns_are_dropped():
    messages = [_user("a"), _assistant([{"type": "text", "text": "x"}], "error"),
                _assistant([{"type": "text", "text": "y"}], "aborted"), _assistant([{"type": "text", "text": "ok"}])]
    assert [m.get("stopReason") for m in prepare_messages(MODEL, messages)] == [None, "stop"]


def test_orphaned_tool_calls_get_an_error_result_before_the_next_user_turn():
    messages = [_user("a"), _assistant([_call("c1"), _call("c2")], "toolUse"), _result("c1"), _user("b")]
    out = prepare_messages(MODEL, messages)
    assert [m["role"] for m in out] == ["user", "assistant", "toolResult", "toolResult", "user"]
    synthetic = out[3]
    assert synthetic["toolCallId"] == "c2" and synthetic["isError"] is True
    assert synthetic["content"] == [{"type": "text", "text": "No result provided"}]


def test_orphans_at_the_end_and_after_a_failed_retry():
    messages = [_user("a"), _assistant([_call("c1")], "toolUse"), _assistant([], "error")]
    out = prepare_messages(MODEL, messages)
    assert [m["role"] for m in out] == ["user", "assistant", "toolResult"]


def test_system_message_waits_for_pending_results():
    system = {"role": "system", "content": "note", "timestamp": 2}
    messages = [_user("a"), _assistant([_call("c1")], "toolUse"), system, _result("c1")]
    out = prepare_messages(MODEL, messages)
    assert [m["role"] for m in out] == ["user", "assistant", "toolResult", "system"]
    assert out[2]["content"][0]["text"] == "out"


def test_thinking_is_kept_only_for_the_same_model():
    blocks = [{"type": "thinking", "thinking": "plan"}, {"type": "thinking", "thinking": "  "},
              {"type": "thinking", "thinking": "", "thinkingSignature": "sig"},
              {"type": "text", "text": "hi", "textSignature": "t"}, _call("c1", thoughtSignature="ts")]
    own = prepare_messages(MODEL, [_assistant(blocks, "toolUse")])[0]["content"]
    assert [b["type"] for b in own] == ["thinking", "thinking", "text", "toolCall"]
    assert own[1] == {"type": "thinking", "thinking": "", "thinkingSignature": "sig"}
    assert own[3]["thoughtSignature"] == "ts"
    foreign = prepare_messages(MODEL, [_assistant(blocks, "toolUse", model="other")])[0]["content"]
    assert foreign == [{"type": "text", "text": "hi"}, _call("c1")]


def test_images_replaced_for_text_only_models():
    user = _user([{"type": "text", "text": "look"}, IMAGE, IMAGE, {"type": "text", "text": "and"}, IMAGE])
    tool = {**_result("c1"), "content": [IMAGE]}
    out = prepare_messages(MODEL, [user, _assistant([_call("c1")], "toolUse"), tool])
    note = "(image omitted: model does not support images)"
    assert out[0]["content"] == [{"type": "text", "text": "look"}, {"type": "text", "text": note},
                                 {"type": "text", "text": "and"}, {"type": "text", "text": note}]
    assert out[2]["content"] == [{"type": "text", "text": "(tool image omitted: model does not support images)"}]
    assert prepare_messages(VISION, [user])[0]["content"] == user["content"]


def test_input_is_never_mutated_and_untouched_messages_are_shared():
    messages = [_user([IMAGE]), _assistant([{"type": "thinking", "thinking": "t"}, _call("c1", thoughtSignature="s")],
                                           "toolUse", model="other"), _user("plain")]
    before = copy.deepcopy(messages)
    out = prepare_messages(MODEL, messages)
    assert messages == before
    assert out[-1] is messages[-1]
    assert out is not messages
