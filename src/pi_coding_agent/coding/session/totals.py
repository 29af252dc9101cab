"""What the whole-file commands count (``get_session_stats``, ``get_fork_messages``), kept up to date.

Both walk every entry of every branch. The store computes each on first use, then adds each appended
entry. Stats need every message's usage, so they read the whole file once; fork messages need only
the user messages, and an on-disk line whose start names another role is not even parsed
(``EntryList.messages_of``), so the first ``get_fork_messages`` of a large file costs little more
than reading it.
"""

from __future__ import annotations

from typing import Any

from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.session.context import content_text
from pi_coding_agent.coding.session.entries import Entry
from pi_coding_agent.coding.session.entry_list import EntryList

_USAGE_KINDS = frozenset({"usage", "branch_summary", "compaction"})


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
            totals = FileTotals()
            for entry in self._entries:
                totals.add(entry)
            self._totals = totals
        return self._totals.stats()

    def fork_messages(self) -> list[dict[str, str]]:
        if self._user_texts is None:
            texts = map(user_text, self._entries.messages_of("user"))
            self._user_texts = [text for text in texts if text is not None]
        return [{"entryId": entry_id, "text": text} for entry_id, text in self._user_texts]
