"""What ``pi config`` lists, as pi 1.6.0's resource picker does: every resource a scope's resolution
finds (installed packages, the top-level extensions, skills, prompt templates and themes of the
agent dir, ``~/.agents/skills`` and the settings lists, pi's built-in extensions), each enabled or not,
in groups: packages first, then top-level and built-in, user before project.

The user view resolves the user settings alone; the project view resolves both files, so it also holds
the user's resources, which the project can only override (``resource_overrides``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.extensions import loader
from pi_coding_agent.coding.extensions.builtins import PREFIX as BUILTIN_PREFIX
from pi_coding_agent.coding.extensions.builtins import builtin_state
from pi_coding_agent.coding.packages import sources as src
from pi_coding_agent.coding.packages.manifest import RESOURCE_TYPES
from pi_coding_agent.coding.packages.resolve import (
    configured,
    dedupe,
    delta_base,
    entry_states,
    source_of,
)
from pi_coding_agent.coding.resources import resource_files as rf
from pi_coding_agent.coding.resources import resource_paths as rp
from pi_coding_agent.coding.resources.settings import (
    PROJECT_DIR,
    SETTINGS_FILE,
    SettingsPath,
)
from pi_coding_agent.coding.resources.settings_file import read_for_update

KIND_LABELS = {"extensions": "Extensions", "skills": "Skills", "prompts": "Prompts", "themes": "Themes"}


@dataclass
class ResourceItem:
    """One listed resource, with pi's ``sourceInfo`` facts (``source``: the package source as
    configured, or ``auto`` / ``local`` / ``builtin`` for a top-level one)."""

    kind: str  # "extensions" | "skills" | "prompts" | "themes"
    path: str  # the file, absolute, or ``builtin:<name>``
    enabled: bool
    origin: str  # "package" | "top-level"
    source: str
    scope: str  # "user" | "project"
    base_dir: Path | None = None  # a package's folder; an auto-discovered file's base

    @property
    def display(self) -> str:
        """The short name pi shows: a skill's folder, an extension's ``folder/file`` when nested."""
        if self.source == "builtin":
            return self.path[len(BUILTIN_PREFIX):]
        path = Path(self.path)
        if self.kind == "extensions" and path.parent.name != "extensions":
            return f"{path.parent.name}/{path.name}"
        if self.kind == "skills" and path.name == rf.SKILL_FILE:
            return path.parent.name
        return path.name

    def matches(self, query: str) -> bool:
        """The search rule: the query (case-folded) in the name, the type or the path."""
        needle = query.lower()
        return any(needle in text.lower() for text in (self.display, self.kind, self.path))


@dataclass
class Group:
    """A package, the top-level resources of one base dir, or the built-ins; items by type."""

    label: str
    scope: str
    origin: str
    source: str
    kinds: dict[str, list[ResourceItem]] = field(default_factory=dict)

    def items(self) -> list[ResourceItem]:
        return [item for kind in RESOURCE_TYPES for item in self.kinds.get(kind, [])]


def settings_path(scope: str, agent_dir: Path, cwd: Path) -> Path:
    return top_base(scope, agent_dir, cwd) / SETTINGS_FILE


def top_base(scope: str, agent_dir: Path, cwd: Path) -> Path:
    """The folder relative paths of a scope's settings file are written against."""
    return cwd / PROJECT_DIR if scope == "project" else agent_dir


def read_settings(scope: str, agent_dir: Path, cwd: Path) -> JsonObject | None:
    """The scope's settings file as it is now ({} when absent), None when it is not a JSON object:
    listed as empty then, and never written over (pi's picker does the same)."""
    return read_for_update(settings_path(scope, agent_dir, cwd))


def list_of(data: JsonObject, key: str) -> list[Any]:
    """A settings list, or [] when absent or not a list."""
    value = data.get(key)
    return list(value) if isinstance(value, list) else []


def resolve_items(agent_dir: Path, cwd: Path, with_project: bool, builtins: Sequence[str]) -> list[ResourceItem]:
    """Every resource of the user settings (and the project's with ``with_project``), enabled or not;
    a file both scopes reach is the project's."""
    user = read_settings("user", agent_dir, cwd) or {}
    project = (read_settings("project", agent_dir, cwd) or {}) if with_project else {}
    items = _package_items(configured(user, project), agent_dir, cwd)
    top = [*(_top_level_items("project", project, agent_dir, cwd) if with_project else []),
           *_top_level_items("user", user, agent_dir, cwd)]
    unique: dict[str, ResourceItem] = {}  # a file reached twice (a symlink, a listed auto dir) once
    for item in top:
        unique.setdefault(os.path.realpath(item.path), item)
    return [*items, *unique.values(), *_builtin_items(builtins, user, project)]


def _builtin_items(builtins: Sequence[str], user: JsonObject, project: JsonObject) -> list[ResourceItem]:
    """pi's bundled extensions; one the project's settings name is the project's (an override)."""
    lists = {scope: [e for e in list_of(data, "extensions") if isinstance(e, str)]
             for scope, data in (("project", project), ("user", user))}
    items = []
    for name in builtins:
        enabled, scope = builtin_state(name, lists["user"], lists["project"])
        items.append(ResourceItem("extensions", BUILTIN_PREFIX + name, enabled, "top-level", "builtin", scope))
    return items


def build_groups(items: Sequence[ResourceItem], agent_dir: Path) -> list[Group]:
    """Items grouped as pi shows them, groups and items in pi's order."""
    groups: dict[tuple[str, str, str, str], Group] = {}
    for item in items:
        key = (item.origin, item.scope, item.source, str(item.base_dir or "") if item.origin != "package" else "")
        group = groups.setdefault(key, Group(_label(item, agent_dir), item.scope, item.origin, item.source))
        group.kinds.setdefault(item.kind, []).append(item)
    ordered = sorted(groups.values(), key=lambda g: (g.origin != "package", g.scope != "user", g.source.casefold()))
    for group in ordered:
        group.kinds = {kind: sorted(group.kinds[kind], key=lambda i: i.display.casefold())
                       for kind in RESOURCE_TYPES if kind in group.kinds}
    return ordered


def _label(item: ResourceItem, agent_dir: Path) -> str:
    if item.origin == "package":
        return f"{item.source} ({item.scope})"
    if item.source == "builtin":
        return "Built-in" if item.scope == "user" else "Built-in (project override)"
    if item.source == "auto":
        place = "User" if item.scope == "user" else "Project"
        return f"{place} ({_home_short(item.base_dir or agent_dir)})"
    return "User settings" if item.scope == "user" else "Project settings"


def _home_short(path: Path) -> str:
    text, home = str(path), os.path.expanduser("~")
    if text == home or text.startswith(home + os.sep):
        text = "~" + text[len(home):]
    return text if text.endswith("/") else text + "/"


def _package_items(entries: list[tuple[object, str]], agent_dir: Path, cwd: Path) -> list[ResourceItem]:
    """The installed packages' resources, ``entries`` project first: a project entry of a user
    package's identity replaces it; an ``autoload: false`` one claims only the files it names."""
    deduped = dedupe(entries, agent_dir, cwd)
    claimed: dict[str, set[Path]] = {}
    items: list[ResourceItem] = []
    for entry, scope in deduped:
        base_source, base_scope = delta_base(entry, scope, deduped, agent_dir, cwd)
        root = src.installed_path(src.parse_source(base_source), base_scope, agent_dir, cwd)
        if not root.is_dir():
            continue
        states = entry_states(root, entry, scope, claimed.setdefault(str(root), set())) or {}
        items += [ResourceItem(kind, str(path), on, "package", source_of(entry), scope, root)
                  for kind in RESOURCE_TYPES for path, on in states.get(kind, {}).items()]
    return items


def _top_level_items(scope: str, data: JsonObject, agent_dir: Path, cwd: Path) -> list[ResourceItem]:
    """The scope's own top-level resources, each judged by that scope's ``!``/``+``/``-`` filters."""
    base = top_base(scope, agent_dir, cwd)
    items: list[ResourceItem] = []
    for kind in RESOURCE_TYPES:
        entries = [SettingsPath(e, base, scope) for e in list_of(data, kind) if isinstance(e, str)]
        plain = [e for e in entries if e.entry[:1] not in "!+-"]
        filters = [e for e in entries if e.entry[:1] in "!+-"]
        for file in _candidates(kind, scope, plain, agent_dir, cwd):
            on = rp.is_enabled(file.path, filters, file.base_dir or base)
            items.append(ResourceItem(kind, str(file.path), on, "top-level", file.source, scope, file.base_dir))
    return items


def _candidates(kind: str, scope: str, plain: list[SettingsPath], agent_dir: Path,
                cwd: Path) -> list[rp.ResourceFile]:
    """Every file the scope's settings entries and directories hold, filters not applied."""
    trusted = scope == "project"
    if kind == "skills":
        found = rf.skill_candidates(agent_dir, cwd, trusted, [], plain, True)
    elif kind == "prompts":
        found = rf.template_candidates(agent_dir, cwd, trusted, [], plain, True)
    elif kind == "extensions":
        found = [rp.ResourceFile(s.path, s.source, s.scope, s.base_dir)
                 for s in loader.discover(cwd, agent_dir, trusted, [], plain, True)]
    else:
        found = rf.theme_candidates(agent_dir, cwd, trusted, plain)
    return [f for f in found if f.scope == scope]
