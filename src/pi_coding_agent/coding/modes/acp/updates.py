"""pi session events and saved messages as ACP ``session/update`` notifications.

``UpdateStream`` is subscribed to one session's events while it lives; ``replay`` turns a saved
transcript into the same updates for ``session/load``. Both share the tool-call rendering of
``tool_calls`` so a replayed call looks like the live one did.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from typing import Any

from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.events import (
    AgentEvent,
    AutoRetryStartEvent,
    CompactionStartEvent,
    MessageEndEvent,
    MessageStartEvent,
    SessionInfoChangedEvent,
    ThinkingLevelChangedEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
)
from pi_coding_agent.coding.modes.acp.tool_calls import block_content, end_update, start_update
from pi_coding_agent.coding.session.context import content_text

Send = Callable[[JsonObject], None]

_TASK_LINE = re.compile(r"^\s*(?:[-*]|\d+[.)])\s+\[([ xX~-])\]\s+(.+?)\s*$", re.MULTILINE)
PLAN_MIN_ENTRIES = 2


def text_chunk(kind: str, text: str, message_id: str | None) -> JsonObject:
    update: JsonObject = {"sessionUpdate": kind, "content": {"type": "text", "text": text}}
    if message_id is not None:
        update["messageId"] = message_id
    return update


def _thought_id(message_id: str | None) -> str | None:
    """Thoughts are their own stream of chunks, apart from the answer text of the same message."""
    return None if message_id is None else f"{message_id}-thought"


def plan_entries(text: str) -> list[JsonObject]:
    """A Markdown task list the model wrote (``- [ ] step`` / ``- [x] step``) as ACP plan entries."""
    entries = []
    for mark, content in _TASK_LINE.findall(text):
        status = "completed" if mark in "xX" else "in_progress" if mark in "~-" else "pending"
        entries.append({"content": content, "priority": "medium", "status": status})
    return entries if len(entries) >= PLAN_MIN_ENTRIES else []


class UpdateStream:
    """Live translation of one session's events; ``terminal_of`` says which calls ran in a client terminal."""

    def __init__(self, send: Send, cwd: str, terminal_of: Callable[[str], str | None],
                 on_config_changed: Callable[[], None]) -> None:
        self._send = send
        self._cwd = cwd
        self._terminal_of = terminal_of
        self._on_config_changed = on_config_changed
        self._message_id: str | None = None
        self._calls: dict[str, tuple[str, JsonObject, list[JsonObject]]] = {}
        self._plan: list[JsonObject] = []

    def on_event(self, event: AgentEvent) -> None:
        """Any event but ``message_update``, which goes to ``on_message_update`` directly."""
        handler = _HANDLERS.get(event["type"])
        if handler is not None:
            handler(self, event)

    # ------------------------------------------------------------------ assistant output

    def _message_start(self, event: MessageStartEvent) -> None:
        if event["message"]["role"] == "assistant":
            self._message_id = str(uuid.uuid4())

    def on_message_update(self, event: AgentEvent) -> None:
        """A streamed delta (a subscription of its own: it comes once per chunk)."""
        delta: Any = event["assistantMessageEvent"]  # type: ignore[typeddict-item]  # message_update only
        kind = delta.get("type")
        if kind == "text_delta":
            if text := delta.get("delta"):
                self._send(text_chunk("agent_message_chunk", text, self._message_id))
        elif kind == "thinking_delta":
            if text := delta.get("delta"):
                self._send(text_chunk("agent_thought_chunk", text, _thought_id(self._message_id)))
        elif kind == "toolcall_end":
            call = delta.get("toolCall") or {}
            self.announce(call.get("id"), call.get("name"), call.get("arguments"))

    def _message_end(self, event: MessageEndEvent) -> None:
        message = event["message"]
        if message["role"] != "assistant":
            return
        entries = plan_entries(content_text(message.get("content"), ""))
        if entries and entries != self._plan:
            self._plan = entries
            self._send({"sessionUpdate": "plan", "entries": entries})

    # ------------------------------------------------------------------ tools

    def announce(self, call_id: object, name: object, args: object) -> None:
        """``tool_call`` (pending) once per call, from whichever event names it first."""
        if not isinstance(call_id, str) or call_id in self._calls or not isinstance(name, str):
            return
        arguments = args if isinstance(args, dict) else {}
        update = start_update(call_id, name, arguments, self._cwd, "pending")
        self._calls[call_id] = (name, arguments, update.get("content", []))
        self._send(update)

    def started(self, call_id: str) -> None:
        """The call passed its permission check and runs now."""
        self._send({"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": "in_progress"})

    def _tool_start(self, event: ToolExecutionStartEvent) -> None:
        self.announce(event["toolCallId"], event["toolName"], event.get("args"))

    def _tool_update(self, event: ToolExecutionUpdateEvent) -> None:
        call_id = event["toolCallId"]
        if self._terminal_of(call_id) is not None:
            return  # the client shows the live terminal itself
        content = block_content((event.get("partialResult") or {}).get("content"))
        if content:
            self._send({"sessionUpdate": "tool_call_update", "toolCallId": call_id, "content": content})

    def _tool_end(self, event: ToolExecutionEndEvent) -> None:
        call_id = event["toolCallId"]
        name, args, diffs = self._calls.pop(call_id, (event["toolName"], {}, []))  # (the end event has no args)
        self._send(end_update(call_id, name, args, event.get("result") or {}, bool(event.get("isError")),
                              self._cwd, diffs, self._terminal_of(call_id)))

    # ------------------------------------------------------------------ session state

    def _session_info(self, event: SessionInfoChangedEvent) -> None:
        self._send({"sessionUpdate": "session_info_update", "title": event.get("name")})

    def _thinking_level(self, event: ThinkingLevelChangedEvent) -> None:
        self._on_config_changed()

    def _status_thought(self, text: str) -> None:
        self._send(text_chunk("agent_thought_chunk", text, None))

    def _compaction_start(self, event: CompactionStartEvent) -> None:
        self._status_thought(f"\n[compacting the conversation ({event.get('reason', 'threshold')})]\n")

    def _retry_start(self, event: AutoRetryStartEvent) -> None:
        self._status_thought(f"\n[retrying after an error, attempt {event.get('attempt')}/"
                             f"{event.get('maxAttempts')}: {event.get('errorMessage', '')}]\n")


_HANDLERS: dict[str, Callable[[UpdateStream, Any], None]] = {  # each takes the event of its type
    "message_start": UpdateStream._message_start,
    "message_end": UpdateStream._message_end,
    "tool_execution_start": UpdateStream._tool_start,
    "tool_execution_update": UpdateStream._tool_update,
    "tool_execution_end": UpdateStream._tool_end,
    "session_info_changed": UpdateStream._session_info,
    "thinking_level_changed": UpdateStream._thinking_level,
    "compaction_start": UpdateStream._compaction_start,
    "auto_retry_start": UpdateStream._retry_start,
}
HANDLED = tuple(_HANDLERS)  # what ``on_event`` translates


# ---------------------------------------------------------------------------- replay


def _user_blocks(content: Any) -> list[JsonObject]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    blocks = []
    for block in content or []:
        if block.get("type") == "text" and block.get("text"):
            blocks.append({"type": "text", "text": block["text"]})
        elif block.get("type") == "image":
            blocks.append({"type": "image", "data": block.get("data", ""), "mimeType": block.get("mimeType", "")})
    return blocks


SUMMARY_ROLES = {"compaction": "compactionSummary", "branch_summary": "branchSummary"}


def branch_messages(entries: list[JsonObject], leaf_id: str | None) -> list[JsonObject]:
    """The whole history of the current branch (older messages a compaction replaced included)."""
    by_id = {e.get("id"): e for e in entries}
    branch: list[dict[str, Any]] = []
    seen: set[object] = set()
    entry = by_id.get(leaf_id)
    while entry is not None and entry.get("id") not in seen:
        seen.add(entry.get("id"))
        branch.append(entry)
        entry = by_id.get(entry.get("parentId"))
    messages = []
    for entry in reversed(branch):
        if entry.get("type") == "message" and isinstance(entry.get("message"), dict):
            messages.append(entry["message"])
        elif entry.get("type") in SUMMARY_ROLES:
            messages.append({"role": SUMMARY_ROLES[entry["type"]], "summary": entry.get("summary")})
    return messages


def replay(messages: list[dict[str, Any]], cwd: str, send: Send) -> None:
    """A saved transcript as the updates a client would have seen live (``session/load``)."""
    calls: dict[str, tuple[str, JsonObject, list[JsonObject]]] = {}
    for index, message in enumerate(messages):
        role = message.get("role")
        message_id = f"m{index}"
        if role == "user":
            for block in _user_blocks(message.get("content")):
                send({"sessionUpdate": "user_message_chunk", "content": block, "messageId": message_id})
        elif role == "assistant":
            _replay_assistant(message, message_id, cwd, send, calls)
        elif role == "toolResult":
            call_id = message.get("toolCallId", "")
            name, args, diffs = calls.pop(call_id, (message.get("toolName", ""), {}, []))
            result = {"content": message.get("content", [])}
            if "details" in message:
                result["details"] = message["details"]
            send(end_update(call_id, name, args, result, bool(message.get("isError")), cwd, diffs))
        elif role in ("compactionSummary", "branchSummary") and message.get("summary"):
            send(text_chunk("agent_thought_chunk", str(message["summary"]), message_id))


def _replay_assistant(message: dict[str, Any], message_id: str, cwd: str, send: Send,
                      calls: dict[str, tuple[str, JsonObject, list[JsonObject]]]) -> None:
    for block in message.get("content") or []:
        kind = block.get("type")
        if kind == "thinking" and block.get("thinking"):
            send(text_chunk("agent_thought_chunk", block["thinking"], _thought_id(message_id)))
        elif kind == "text" and block.get("text"):
            send(text_chunk("agent_message_chunk", block["text"], message_id))
        elif kind == "toolCall" and isinstance(block.get("id"), str):
            args = block.get("arguments") if isinstance(block.get("arguments"), dict) else {}
            update = start_update(block["id"], str(block.get("name", "")), args, cwd, "in_progress")
            calls[block["id"]] = (str(block.get("name", "")), args, update.get("content", []))
            send(update)
    entries = plan_entries(content_text(message.get("content"), ""))
    if entries:
        send({"sessionUpdate": "plan", "entries": entries})
