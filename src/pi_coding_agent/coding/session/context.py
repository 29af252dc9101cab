"""What the model sees of a session: select the active entries, project them to messages.

Selection follows the branch from the leaf; the latest compaction on it replaces everything
before its first kept entry; ``context_edit`` entries hide or rewrite earlier entries. The result
keeps, for every message, the id of the entry it came from (compaction needs the provenance).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import field
from typing import Any, cast

from pi_coding_agent.ai.records import record
from pi_coding_agent.ai.types import JsonObject, SystemMessage, Tool
from pi_coding_agent.coding.events import Message
from pi_coding_agent.coding.session.entries import Entry
from pi_coding_agent.coding.session.ids import iso_to_ms

_EDITABLE_ROLES = frozenset({"user", "assistant", "toolResult", "custom"})
_BLOCK_ROLES = frozenset({"user", "assistant", "toolResult"})


@record
class SessionContext:
    """The context a session branch projects: its messages, model and thinking level."""

    messages: list[Message] = field(default_factory=list)
    model: tuple[str, str] | None = None  # (provider, model id)
    thinking_level: str = "off"
    context_entry_ids: list[str] = field(default_factory=list)  # source entry id of each message
    # the ``custom`` entries among them (never sent to the model; the terminal UI draws them), each with
    # the number of messages before it
    custom_entries: list[tuple[int, Entry]] = field(default_factory=list)


def select_context_entries(path: list[Entry]) -> list[Entry]:
    """The entries of the path that reach the model, starting with the latest compaction if any."""
    compaction_index = next(
        (i for i in range(len(path) - 1, -1, -1) if path[i].get("type") == "compaction"), None
    )
    if compaction_index is None:
        return path
    compaction = path[compaction_index]
    first_kept = compaction.get("firstKeptEntryId")
    selected = [compaction]
    keeping = False
    for entry in path[:compaction_index]:
        keeping = keeping or entry.get("id") == first_kept
        if keeping and not _is_system_message(entry):
            selected.append(entry)
    selected.extend(path[compaction_index + 1 :])
    return selected


def _is_system_message(entry: Entry) -> bool:
    return entry.get("type") == "message" and (entry.get("message") or {}).get("role") == "system"


def entry_messages(entry: Entry) -> list[Message]:
    """The messages one entry contributes (before context edits)."""
    kind = entry.get("type")
    if kind == "message":
        message = entry.get("message") or {}
        if message.get("content") is None:
            role = message.get("role")
            if role == "system":
                return [file_message({**message, "content": ""})]
            if role in _BLOCK_ROLES:
                return [file_message({**message, "content": []})]
        return [file_message(message)]
    if kind == "custom_message":
        content = entry.get("content")
        custom = _present(entry, "customType")
        custom.update(content=[] if content is None else content, **_present(entry, "display", "details"))
        return [file_message({"role": "custom", **custom, "timestamp": iso_to_ms(entry.get("timestamp"))})]
    if kind == "branch_summary" and entry.get("summary"):
        return [file_message({"role": "branchSummary", **_present(entry, "summary", "fromId"),
                            "timestamp": iso_to_ms(entry.get("timestamp"))})]
    if kind == "compaction":
        summary = file_message({"role": "compactionSummary", **_present(entry, "summary", "tokensBefore"),
                              "timestamp": iso_to_ms(entry.get("timestamp"))})
        system = entry.get("systemMessage")
        return [system, summary] if system else [summary]
    return []


def _present(entry: Entry, *keys: str) -> JsonObject:
    """The given fields that the entry has (absent ones stay absent, as JavaScript drops undefined)."""
    return {key: entry[key] for key in keys if key in entry}


def file_message(fields: JsonObject) -> Message:
    """A message as a session file holds it: taken as written (pi wrote it; a hand-edited file may
    lack a field, and the readers of each role tolerate that), never validated on the way in."""
    return cast(Message, fields)


def apply_edit(messages: list[Message], edit: Entry | None) -> list[Message]:
    """A ``null`` replacement hides the entry; otherwise only ``content`` is swapped."""
    if edit is None:
        return messages
    replacement = edit.get("replacement")
    if replacement is None:
        return []
    edited = []
    for message in messages:
        role = message.get("role")
        if role not in _EDITABLE_ROLES:
            edited.append(message)
            continue
        content = replacement.get("content")
        if role in ("assistant", "toolResult") and isinstance(content, str):
            content = [{"type": "text", "text": content}]
        edited.append(file_message({**message, "content": content}))
    return edited


Settings = tuple[tuple[str, str] | None, str]  # (provider, model id) or None, thinking level
NO_SETTINGS: Settings = (None, "off")


def settings_after(settings: Settings, entry: Entry) -> Settings:
    """Model and thinking level once ``entry`` is on the path (assistant replies also set the model)."""
    kind = entry.get("type")
    if kind == "thinking_level_change":
        return settings[0], entry.get("thinkingLevel")  # type: ignore[return-value]
    if kind == "model_change":
        return (entry.get("provider"), entry.get("modelId")), settings[1]  # type: ignore[return-value]
    if kind == "message":
        message = entry.get("message") or {}
        if message.get("role") == "assistant":
            return (message.get("provider"), message.get("model")), settings[1]  # type: ignore[return-value]
    return settings


def restored_settings(path: Sequence[Entry], kinds: Sequence[Any] | None = None) -> Settings:
    """Model and thinking level in force at the leaf: each set by the last entry on the path that
    sets it, searched from the leaf. ``kinds`` (the path's types, when known without reading the
    entries) lets a long path be read only as far back as a reply or model change."""
    if kinds is None:
        kinds = [entry.get("type") for entry in path]
    level_at = last_index(kinds, "thinking_level_change")
    level = NO_SETTINGS[1] if level_at is None else settings_after(NO_SETTINGS, path[level_at])[1]
    for index in range(len(kinds) - 1, -1, -1):
        if kinds[index] in ("model_change", "message"):
            model = settings_after(NO_SETTINGS, path[index])[0]  # a message other than a reply sets nothing
            if model is not None:
                return model, level
    return NO_SETTINGS[0], level


def last_index(items: Sequence[Any], value: Any) -> int | None:
    """The position of the last item equal to ``value`` (None when there is none), found at C speed."""
    backwards = list(reversed(items))
    return len(items) - 1 - backwards.index(value) if value in backwards else None


def context_start(path: Sequence[Entry], kinds: Sequence[Any] | None = None) -> int | None:
    """Where the model-visible part of a path starts: the first kept entry of its latest compaction
    (0 without a compaction; None when that entry is not on ``path`` before the compaction).
    ``kinds``: the path's types, when known without reading the entries.

    ``select_context_entries`` gives the same result for ``path[context_start(path):]`` as for the
    whole path, so per-turn work can skip everything a compaction already summarised.
    """
    compaction_index = _last_compaction(path, kinds)
    if compaction_index is None:
        return 0
    first_kept = path[compaction_index].get("firstKeptEntryId")
    for i in range(compaction_index - 1, -1, -1):
        if path[i].get("id") == first_kept:
            return i
    return None


def context_start_of(path: Sequence[Entry], kinds: Sequence[Any] | None = None) -> int:
    """:func:`context_start` of a root-to-leaf path: a first kept entry missing from it keeps nothing
    before the compaction, which then starts the model-visible part."""
    start = context_start(path, kinds)
    if start is not None:
        return start
    compaction_index = _last_compaction(path, kinds)
    assert compaction_index is not None  # context_start is 0 without one
    return compaction_index


def _last_compaction(path: Sequence[Entry], kinds: Sequence[Any] | None) -> int | None:
    if kinds is None:
        return next((i for i in range(len(path) - 1, -1, -1) if path[i].get("type") == "compaction"), None)
    return last_index(kinds, "compaction")


def build_context(path: list[Entry], settings: Settings | None = None) -> SessionContext:
    """Project a root-to-leaf path (or its model-visible suffix with the leaf's ``settings``) into the
    model context."""
    selected = select_context_entries(path)
    edits = {e.get("targetId"): e for e in selected if e.get("type") == "context_edit"}
    context = SessionContext()
    for index, entry in enumerate(selected):
        if index > 0 and entry.get("type") == "compaction":
            continue  # an older compaction inside the kept range: only the latest one speaks
        entry_id = entry.get("id")
        if entry.get("type") == "custom":
            context.custom_entries.append((len(context.messages), entry))
        messages = entry_messages(entry)
        if edits:
            messages = apply_edit(messages, edits.get(entry_id))
        context.messages.extend(messages)
        context.context_entry_ids.extend([entry_id] * len(messages))  # type: ignore[list-item]
    context.model, context.thinking_level = restored_settings(path) if settings is None else settings
    return context


def current_system_message(messages: list[Message]) -> SystemMessage | None:
    """Replay every system message (prompt patches, tool deltas) into one full system message."""
    texts: list[str] = []
    sections: dict[str, str | None] = {}
    tools: dict[str, Tool] = {}
    timestamp = None
    for message in messages:
        if message["role"] != "system":
            continue
        if timestamp is None:
            timestamp = message.get("timestamp")
        text = content_text(message.get("content"), "\n")
        if text:
            texts.append(text)
        for name, value in (message.get("sections") or {}).items():
            if value is None:
                sections.pop(name, None)
            else:
                sections[name] = value
        for removed in message.get("toolsRemoved") or []:
            tools.pop(removed.get("name", ""), None)
        for tool in message.get("toolsAdded") or []:
            tools[tool.get("name")] = tool
    if timestamp is None and not tools:
        return None
    # built key by key in pi's order (``timestamp`` last)
    result = cast(SystemMessage, {"role": "system", "content": "\n\n".join(texts)})
    if sections:
        result["sections"] = sections
    if tools:
        result["toolsAdded"] = list(tools.values())
    result["timestamp"] = timestamp if timestamp is not None else 0
    return result


def content_text(content: Any, separator: str) -> str:
    """Text of a string or of the text blocks of a content list."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return separator.join(
        block.get("text", "") for block in content if isinstance(block, dict) and block.get("type") == "text"
    )
