"""Render a wire-neutral scripted response as OpenAI Responses API stream events.

Each scripted block becomes one output item: thinking -> a ``reasoning`` item with a streamed
summary (its ``signature`` becomes ``encrypted_content``), text -> a ``message`` item with
``output_text`` deltas, toolCall -> a ``function_call`` item with ``function_call_arguments``
deltas (its ``namespace``, if any, on the item), customToolCall (``{"id", "name", "input"}``) -> a
``custom_tool_call`` item with ``custom_tool_call_input`` deltas. The stream opens with ``response.created`` and ends with ``response.completed`` (or
``response.incomplete`` for ``stopReason: "length"``) carrying usage including
``input_tokens_details.cached_tokens``.
"""

from __future__ import annotations

import json
from typing import Any

from .wire_openai_completions import pieces
from .wire_openai_completions import render_error_body as render_error_body


class _Events:
    """Accumulates SSE events, numbering them as the API does."""

    def __init__(self) -> None:
        self.items: list[bytes] = []

    def add(self, kind: str, **fields: Any) -> None:
        payload = {"type": kind, "sequence_number": len(self.items), **fields}
        self.items.append(f"event: {kind}\ndata: {json.dumps(payload)}\n\n".encode())


def _reasoning(ev: _Events, index: int, block: dict[str, Any], size: int) -> dict[str, Any]:
    item_id = f"rs_fake{index}"
    ev.add("response.output_item.added", output_index=index,
           item={"id": item_id, "type": "reasoning", "summary": []})
    part = {"type": "summary_text", "text": ""}
    ev.add("response.reasoning_summary_part.added", item_id=item_id, output_index=index, summary_index=0, part=part)
    for p in pieces(block["thinking"], size):
        ev.add("response.reasoning_summary_text.delta", item_id=item_id, output_index=index, summary_index=0, delta=p)
    ev.add("response.reasoning_summary_text.done", item_id=item_id, output_index=index, summary_index=0,
           text=block["thinking"])
    done_part = {"type": "summary_text", "text": block["thinking"]}
    ev.add("response.reasoning_summary_part.done", item_id=item_id, output_index=index, summary_index=0, part=done_part)
    item = {"id": item_id, "type": "reasoning", "summary": [done_part],
            "encrypted_content": block.get("signature", "enc-fake")}
    ev.add("response.output_item.done", output_index=index, item=item)
    return item


def _message(ev: _Events, index: int, block: dict[str, Any], size: int) -> dict[str, Any]:
    item_id = f"msg_fake{index}"
    ev.add("response.output_item.added", output_index=index,
           item={"id": item_id, "type": "message", "status": "in_progress", "role": "assistant", "content": []})
    ev.add("response.content_part.added", item_id=item_id, output_index=index, content_index=0,
           part={"type": "output_text", "text": "", "annotations": []})
    for p in pieces(block["text"], size):
        ev.add("response.output_text.delta", item_id=item_id, output_index=index, content_index=0, delta=p)
    ev.add("response.output_text.done", item_id=item_id, output_index=index, content_index=0, text=block["text"])
    part = {"type": "output_text", "text": block["text"], "annotations": []}
    ev.add("response.content_part.done", item_id=item_id, output_index=index, content_index=0, part=part)
    item = {"id": item_id, "type": "message", "status": "completed", "role": "assistant", "content": [part]}
    ev.add("response.output_item.done", output_index=index, item=item)
    return item


def _function_call(ev: _Events, index: int, block: dict[str, Any], size: int) -> dict[str, Any]:
    item_id = f"fc_fake{index}"
    call_id = block.get("id") or f"call_{index}"
    args = block["arguments"] if isinstance(block["arguments"], str) else json.dumps(block["arguments"])
    ev.add("response.output_item.added", output_index=index,
           item={"id": item_id, "type": "function_call", "status": "in_progress", "arguments": "",
                 "call_id": call_id, "name": block["name"]})
    for p in pieces(args, size):
        ev.add("response.function_call_arguments.delta", item_id=item_id, output_index=index, delta=p)
    ev.add("response.function_call_arguments.done", item_id=item_id, output_index=index, arguments=args)
    item = {"id": item_id, "type": "function_call", "status": "completed", "arguments": args,
            "call_id": call_id, "name": block["name"], **({"namespace": block["namespace"]} if "namespace" in block else {})}
    ev.add("response.output_item.done", output_index=index, item=item)
    return item


def _custom_tool_call(ev: _Events, index: int, block: dict[str, Any], size: int) -> dict[str, Any]:
    item_id = f"ctc_fake{index}"
    call_id = block.get("id") or f"call_{index}"
    ev.add("response.output_item.added", output_index=index,
           item={"id": item_id, "type": "custom_tool_call", "status": "in_progress", "call_id": call_id,
                 "name": block["name"], "input": ""})
    for p in pieces(block["input"], size):
        ev.add("response.custom_tool_call_input.delta", item_id=item_id, output_index=index, delta=p)
    ev.add("response.custom_tool_call_input.done", item_id=item_id, output_index=index, input=block["input"])
    item = {"id": item_id, "type": "custom_tool_call", "status": "completed", "call_id": call_id,
            "name": block["name"], "input": block["input"]}
    ev.add("response.output_item.done", output_index=index, item=item)
    return item


RENDERERS = {"thinking": _reasoning, "text": _message, "toolCall": _function_call, "customToolCall": _custom_tool_call}


def render_events(response: dict[str, Any], request: dict[str, Any]) -> list[bytes]:
    body = request.get("body") or {}
    size = int(response.get("chunkSize", 8))
    ev = _Events()
    head = {"id": "resp_fake0001", "object": "response", "status": "in_progress",
            "model": body.get("model", "fake-model"), "output": []}
    ev.add("response.created", response=head)
    ev.add("response.in_progress", response=head)
    output = [RENDERERS[b["type"]](ev, i, b, size) for i, b in enumerate(response.get("content", []))]
    usage = response.get("usage") or {}
    cached = usage.get("cacheRead", 0)
    prompt = usage.get("input", 0) + cached
    final = {**head, "output": output, "status": "completed", "usage": {
        "input_tokens": prompt, "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": usage.get("output", 0),
        "output_tokens_details": {"reasoning_tokens": usage.get("reasoning", 0)},
        "total_tokens": prompt + usage.get("output", 0)}}
    if response.get("stopReason") == "length":
        final.update(status="incomplete", incomplete_details={"reason": "max_output_tokens"})
        ev.add("response.incomplete", response=final)
    else:
        ev.add("response.completed", response=final)
    return ev.items
