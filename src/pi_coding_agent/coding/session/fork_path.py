"""The entries a fork keeps: a branch re-chained so that labels follow the path instead of cutting it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pi_coding_agent.coding.session.entries import Entry
from pi_coding_agent.coding.session.ids import new_entry_id


def path_with_labels(branch: list[Entry], labels: Mapping[str, Mapping[str, Any]]) -> list[Entry]:
    """``branch`` (the root-to-target path a fork keeps) re-chained without its label entries, then
    the labels (``SessionManager.labels``) of its entries re-created at its end."""
    path: list[Entry] = []
    label_successor: dict[str, str] = {}  # dropped label id -> next kept entry id
    pending: list[str] = []
    parent: str | None = None
    for entry in branch:
        if entry.get("type") == "label":
            pending.append(entry["id"])
            continue
        label_successor.update((label_id, entry["id"]) for label_id in pending)
        pending.clear()
        copied = {**entry, "parentId": parent}
        kept = entry.get("firstKeptEntryId")
        if entry.get("type") == "compaction" and kept != entry["id"] and kept in label_successor:
            copied["firstKeptEntryId"] = label_successor[kept]
        path.append(copied)
        parent = entry["id"]
    taken = {entry["id"] for entry in path}
    for target_id, label in labels.items():
        if target_id not in taken:
            continue
        label_entry = {"type": "label", "id": new_entry_id(taken), "parentId": parent,
                       "timestamp": label["timestamp"], "targetId": target_id, "label": label["label"]}
        taken.add(label_entry["id"])
        path.append(label_entry)
        parent = label_entry["id"]
    return path
