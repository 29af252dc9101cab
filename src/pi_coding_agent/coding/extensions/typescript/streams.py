"""A streamed assistant message mirrored in the sidecar: the message goes once, then each event
carries only what changed, so an event's cost does not grow with the reply.

Used for ``message_update`` (the session's own reply, seen by handlers) and for
``ctx.modelRegistry.streamSimple`` (an extension's own request). The sidecar applies each record
to its copy and gives the event its ``partial`` (``applyChange`` in ``sidecar.mjs``).
"""

from __future__ import annotations

from typing import Any

import orjson

from pi_coding_agent.ai.types import AssistantMessage, AssistantMessageEvent, JsonObject

_APPENDED = frozenset({"text_delta", "thinking_delta"})  # events the sidecar applies to its copy itself
_OPENED = {"text_start": "text", "thinking_start": "thinking"}  # their block starts empty there
_FINAL = frozenset({"done", "error"})  # they carry the whole final message


def jsonable(value: object) -> object:
    """What orjson cannot write itself: a pydantic model as its dump, anything else as its text."""
    if hasattr(value, "model_dump"):
        return value.model_dump()
    return str(value)


class MessageMirror:
    """The host's view of one message copy in the sidecar: what it was last brought to."""

    def __init__(self) -> None:
        self.message: AssistantMessage | None = None  # the message the copy stands for
        self.change: AssistantMessageEvent | None = None  # the last event applied to it
        self._fields = b""  # its fields but ``content``, as last sent

    def record(self, message: AssistantMessage, change: AssistantMessageEvent) -> JsonObject:
        """``{"event", "message"?, "fields"?, "block"?}``: the whole message the first time (its blocks
        before this event's), then a text or thinking delta alone (the sidecar appends it), any other
        event's block as it stands, and the other fields when they changed. So the copy stands as the
        message did at this event, even when one network read brought several."""
        record: JsonObject = {"event": change}
        self.change = change
        if change["type"] in _FINAL:
            return record
        index: Any = change.get("contentIndex")  # none on ``start``
        fields = orjson.dumps({k: v for k, v in message.items() if k != "content"}, default=jsonable)
        fresh = message is not self.message
        if fresh:
            record["message"] = {**message, "content": message["content"][:index]}
        elif fields != self._fields:
            record["fields"] = orjson.Fragment(fields)
        if index is not None and (fresh or change["type"] not in _APPENDED):
            block = message["content"][index]
            opened = _OPENED.get(change["type"])
            record["block"] = {**block, opened: ""} if opened else block  # its deltas follow
        self.message, self._fields = message, fields
        return record
