"""What the whole-file commands count (``get_session_stats``, ``get_fork_messages``), kept up to date.

Both walk every entry of every branch; in a session opened from a large file that means reading
and parsing the whole file. The store does it once, on first use, and then adds each appended entry.
"""

from __future__ import annotations

from typing import Any

from pi_coding_agent.coding.session.context import content_text
from pi_coding_agent.coding.session.entries import Entry

_USAGE_KINDS = frozenset({"usage", "branch_summary", "compaction"})


class FileTotals:
    """Message counts, usage totals and user messages with text, over the entries added."""

    def __init__(self) -> None:
        self.counts = {"userMessages": 0, "assistantMessages": 0, "toolCalls": 0, "toolResults": 0,
                       "totalMessages": 0}
        self.tokens = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}
        self.cost = 0.0
        self.user_texts: list[tuple[str, str]] = []  # (entry id, text) for get_fork_messages

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
            text = content_text(message.get("content"), "")
            if text:
                self.user_texts.append((entry["id"], text))
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

    def stats(self) -> dict[str, Any]:
        return {**self.counts, "tokens": {**self.tokens, "total": sum(self.tokens.values())}, "cost": self.cost}

    def fork_messages(self) -> list[dict[str, str]]:
        return [{"entryId": entry_id, "text": text} for entry_id, text in self.user_texts]
