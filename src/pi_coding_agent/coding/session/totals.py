"""What the whole-file commands count (``get_session_stats``, ``get_fork_messages``), kept up to date.

Both walk every entry of every branch. The store computes each on first use, then adds each appended
entry. Neither parses what it does not read (``EntryList.skim``): fork messages need only the user
messages, and an on-disk line whose start names another role is not parsed; stats need the usage
and tool calls of assistant messages and the usage of a few entry types, so a user message is only
counted, and a tool result (the bulk of a large file) is parsed only when its line holds a
``"usage"`` key: the first ``get_session_stats`` of a large file reads it and parses its assistant
messages (orjson takes about 2.5 us for a 1 KB line; extracting the usage and tool calls from the
raw line with byte searches took twice that).
"""

from __future__ import annotations

from typing import Any

from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.session.context import content_text
from pi_coding_agent.coding.session.entries import Entry
from pi_coding_agent.coding.session.entry_list import EntryList

_USAGE_KINDS = frozenset({"usage", "branch_summary", "compaction"})
# message roles (as an on-disk line names them) whose entry adds only to the counts, unless a tool
# result's line holds a usage
_COUNTED_ONLY = frozenset({b"user", b"toolResult"})
_ROLE_COUNTS = {b"user": "userMessages", b"toolResult": "toolResults"}


class FileTotals:
    """Message counts and usage totals over the entries added."""

    def __init__(self) -> None:
        self.counts = {"userMessages": 0, "assistantMessages": 0, "toolCalls": 0, "toolResults": 0,
                       "totalMessages": 0}
        self.tokens = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}
        self.cost = 0.0

    def add(self, entry: Entry) -> None:
        kind = entry.get("type")
        if kind in _USAGE_KINDS:
            self._add_usage(entry.get("usage"))
        if kind != "message":
            return
        self.counts["totalMessages"] += 1
        message = entry.get("message") or {}
        role = message.get("role")
        if role == "user":
            self.counts["userMessages"] += 1
        elif role == "toolResult":
            self.counts["toolResults"] += 1
            self._add_usage(message.get("usage"))
        elif role == "assistant":
            self.counts["assistantMessages"] += 1
            content = message.get("content")
            if isinstance(content, list):
                self.counts["toolCalls"] += sum(1 for block in content if block.get("type") == "toolCall")
            self._add_usage(message.get("usage"))

    def count(self, role: bytes | None) -> None:
        """A message entry left unparsed: a user message, or a tool result without usage."""
        self.counts["totalMessages"] += 1
        self.counts[_ROLE_COUNTS[role or b""]] += 1

    def _add_usage(self, usage: Any) -> None:
        if isinstance(usage, dict):
            for key in self.tokens:
                self.tokens[key] += usage.get(key) or 0
            self.cost += (usage.get("cost") or {}).get("total") or 0

    def stats(self) -> JsonObject:
        return {**self.counts, "tokens": {**self.tokens, "total": sum(self.tokens.values())}, "cost": self.cost}


def user_text(entry: Entry) -> tuple[str, str] | None:
    """(entry id, text) of a user message that has text: one item of ``get_fork_messages``."""
    if entry.get("type") != "message":
        return None
    message = entry.get("message") or {}
    if message.get("role") != "user":
        return None
    text = content_text(message.get("content"), "")
    return (entry["id"], text) if text else None


class SessionTotals:
    """The stats and the fork messages of a store's entries, each computed on first use."""

    def __init__(self, entries: EntryList) -> None:
        self._entries = entries
        self._totals: FileTotals | None = None
        self._user_texts: list[tuple[str, str]] | None = None

    def add(self, entry: Entry) -> None:
        """An entry just appended to the store."""
        if self._totals is not None:
            self._totals.add(entry)
        if self._user_texts is not None and (text := user_text(entry)) is not None:
            self._user_texts.append(text)

    def stats(self) -> JsonObject:
        if self._totals is None:
            totals, kinds = FileTotals(), self._entries.kinds()

            def parse(position: int, role: bytes | None, line: bytearray, start: int, end: int) -> bool:
                kind = kinds[position]
                if kind != "message":
                    return kind in _USAGE_KINDS
                return role not in _COUNTED_ONLY or (role == b"toolResult" and line.find(b'"usage"', start, end) >= 0)

            for position, role, entry in self._entries.skim(range(len(kinds)), parse):
                if entry is not None:
                    totals.add(entry)
                elif kinds[position] == "message":
                    totals.count(role)
            self._totals = totals
        return self._totals.stats()

    def fork_messages(self) -> list[dict[str, str]]:
        if self._user_texts is None:
            texts = map(user_text, self._entries.messages_of("user"))
            self._user_texts = [text for text in texts if text is not None]
        return [{"entryId": entry_id, "text": text} for entry_id, text in self._user_texts]
