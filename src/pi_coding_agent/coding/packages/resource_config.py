"""What ``pi config`` shows and changes: each resource an installed package declares, enabled or not
under its settings entry's filters, and the toggle that writes ``+<path>`` / ``-<path>`` (relative to
the package folder) into that entry, as pi 1.6.0's resource picker does.

A toggle drops the entry's earlier ``+``/``-``/``!`` pattern for the same path first; an entry left
with no filters goes back to its plain string form.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.packages import sources as src
from pi_coding_agent.coding.packages.manifest import RESOURCE_TYPES, package_resources
from pi_coding_agent.coding.packages.resolve import source_of
from pi_coding_agent.coding.resources.settings import (
    PROJECT_DIR,
    SETTINGS_FILE,
    read_for_update,
    write_json_atomic,
)


@dataclass(frozen=True)
class ResourceItem:
    source: str  # the package source as configured
    kind: str  # "extensions" | "skills" | "prompts" | "themes"
    pattern: str  # the file's path relative to the package folder (a skill's is its SKILL.md)
    enabled: bool


def settings_path(scope: str, agent_dir: Path, cwd: Path) -> Path:
    return (cwd / PROJECT_DIR if scope == "project" else agent_dir) / SETTINGS_FILE


def _packages(scope: str, agent_dir: Path, cwd: Path) -> tuple[JsonObject, list[Any]]:
    data = read_for_update(settings_path(scope, agent_dir, cwd))
    if data is None:
        raise ValueError(f"{settings_path(scope, agent_dir, cwd)} is not a JSON object")
    entries = data.get("packages")
    return data, list(entries) if isinstance(entries, list) else []


def package_items(scope: str, agent_dir: Path, cwd: Path) -> list[ResourceItem]:
    """Every resource of the scope's installed packages, in settings order then type order."""
    items: list[ResourceItem] = []
    for entry in _packages(scope, agent_dir, cwd)[1]:
        if not isinstance(entry, (str, dict)) or not isinstance(source_of(entry), str):
            continue
        root = src.installed_path(src.parse_source(source_of(entry)), scope, agent_dir, cwd)
        if not root.is_dir():
            continue
        declared = package_resources(root, None) or {}
        enabled = package_resources(root, entry if isinstance(entry, dict) else None) or {}
        for kind in RESOURCE_TYPES:
            on = set(enabled.get(kind, []))
            items += [ResourceItem(source_of(entry), kind, os.path.relpath(path, root), path in on)
                      for path in declared.get(kind, [])]
    return items


def toggle(item: ResourceItem, enabled: bool, scope: str, agent_dir: Path, cwd: Path) -> None:
    """Write ``+pattern`` (enabled) or ``-pattern`` into the item's package entry."""
    data, entries = _packages(scope, agent_dir, cwd)
    index = next((i for i, e in enumerate(entries) if isinstance(e, (str, dict)) and source_of(e) == item.source), None)
    if index is None:
        return
    entry = entries[index]
    entry = dict(entry) if isinstance(entry, dict) else {"source": entry}
    kept = [p for p in entry.get(item.kind) or [] if not (isinstance(p, str) and p.lstrip("!+-") == item.pattern)]
    kept.append(("+" if enabled else "-") + item.pattern)
    entry[item.kind] = kept
    entries[index] = entry if any(k in entry for k in RESOURCE_TYPES) else entry["source"]
    data["packages"] = entries
    write_json_atomic(settings_path(scope, agent_dir, cwd), data)
