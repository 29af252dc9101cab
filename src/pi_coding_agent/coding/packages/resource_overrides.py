"""What a ``pi config`` keypress writes, field for field as pi 1.6.0 writes it.

User view: Space flips a user resource. A package's resource gets ``+path`` / ``-path`` (relative to
the package folder) in its ``packages`` entry, the entry going back to a plain string when it is left
without filters; a top-level one gets ``+path`` / ``-path`` (relative to its base dir, or
``builtin:<name>``) in the settings' ``extensions`` / ``skills`` / ``prompts`` / ``themes`` list. Earlier
patterns naming the same path go first.

Project view: Space cycles a resource between inherit, load (``+``) and unload (``-``), written to the
project's settings only. A user file is named by its absolute path (listed once, then filtered); a user
package is overridden through an ``autoload: false`` entry, removed again once it holds no filter.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.packages import sources as src
from pi_coding_agent.coding.packages.manifest import RESOURCE_TYPES
from pi_coding_agent.coding.packages.resolve import source_of
from pi_coding_agent.coding.packages.resource_config import (
    ResourceItem,
    list_of,
    read_settings,
    settings_path,
    top_base,
)
from pi_coding_agent.coding.resources.settings_file import write_json_atomic

INHERIT, LOAD, UNLOAD = "inherit", "load", "unload"


def item_key(item: ResourceItem) -> str:
    return f"{item.kind}:{item.path}"


def _target(entry: str) -> str:
    return entry[1:] if entry[:1] in "!+-" else entry


def _write(scope: str, data: JsonObject, agent_dir: Path, cwd: Path) -> None:
    write_json_atomic(settings_path(scope, agent_dir, cwd), data)


# ---------------------------------------------------------------------- user view


def toggle_user(item: ResourceItem, agent_dir: Path, cwd: Path) -> bool | None:
    """Flip a user resource; its new state, or None when its package entry is gone or the file is
    not a JSON object."""
    enabled = not item.enabled
    data = read_settings("user", agent_dir, cwd)
    mark = "+" if enabled else "-"
    if data is None:
        return None
    if item.origin == "package":
        packages = list_of(data, "packages")
        index = next((i for i, p in enumerate(packages) if _source(p) == item.source), None)
        if index is None:
            return None
        pattern = _package_pattern(item)
        packages[index] = _set_filter(packages[index], item.kind, pattern, mark + pattern)
        data["packages"] = packages
    else:
        pattern = _own_pattern(item, agent_dir, cwd)
        kept = [e for e in list_of(data, item.kind) if not (isinstance(e, str) and _target(e) == pattern)]
        data[item.kind] = [*kept, mark + pattern]
    _write("user", data, agent_dir, cwd)
    return enabled


def _set_filter(entry: Any, kind: str, pattern: str, new: str | None) -> Any:
    """The package entry with ``pattern``'s filters of ``kind`` replaced by ``new`` (None: dropped);
    an entry left without filters is its source again, or None for an ``autoload: false`` one."""
    entry = dict(entry) if isinstance(entry, dict) else {"source": entry}
    kept = [e for e in entry.get(kind) or [] if not (isinstance(e, str) and _target(e) == pattern)]
    kept += [new] if new is not None else []
    if kept:
        entry[kind] = kept
    else:
        entry.pop(kind, None)
    if any(k in entry for k in RESOURCE_TYPES):
        return entry
    return None if entry.get("autoload") is False else entry["source"]


def _source(entry: Any) -> str | None:
    return source_of(entry) if isinstance(entry, str) or (isinstance(entry, dict) and "source" in entry) else None


def _package_pattern(item: ResourceItem) -> str:
    return os.path.relpath(item.path, item.base_dir or Path(item.path).parent)


def _own_pattern(item: ResourceItem, agent_dir: Path, cwd: Path) -> str:
    """A top-level resource as its own scope's settings name it."""
    if item.source == "builtin":
        return item.path
    return os.path.relpath(item.path, item.base_dir or top_base(item.scope, agent_dir, cwd))


# ---------------------------------------------------------------------- project view


class ProjectOverrides:
    """The project view's three-state cycle; ``inherited`` maps each user resource (``item_key``) to
    whether the user settings enable it."""

    def __init__(self, agent_dir: Path, cwd: Path, inherited: Mapping[str, bool]) -> None:
        self.agent_dir, self.cwd, self.inherited = agent_dir, cwd, inherited
        self._read: tuple[tuple[int, int] | None, JsonObject] | None = None  # (file stamp, parsed file)

    def _project(self) -> JsonObject:
        """The project file as it is now, parsed again only when its stamp changed: every visible row
        asks for its state on every redraw."""
        try:
            stat = settings_path("project", self.agent_dir, self.cwd).stat()
            stamp: tuple[int, int] | None = (stat.st_mtime_ns, stat.st_size)
        except OSError:
            stamp = None
        if self._read is None or self._read[0] != stamp:
            self._read = stamp, read_settings("project", self.agent_dir, self.cwd) or {}
        return self._read[1]

    def is_inherited(self, item: ResourceItem) -> bool:
        return item.scope == "user" or item_key(item) in self.inherited

    def inherited_enabled(self, item: ResourceItem) -> bool:
        return self.inherited.get(item_key(item), item.enabled if item.scope == "user" else True)

    def state(self, item: ResourceItem) -> str:
        """The project's word on ``item``: inherit, load or unload (the last matching entry wins)."""
        project = self._project()
        if item.origin == "top-level":
            return _state_of(list_of(project, item.kind), self._top_patterns(item), empty_unloads=False)
        entry = self._package_entry(project, item)[1]
        if not isinstance(entry, dict) or not isinstance(entry.get(item.kind), list):
            return INHERIT
        return _state_of(entry[item.kind], {_package_pattern(item)}, empty_unloads=entry.get("autoload") is not False)

    def cycle(self, item: ResourceItem) -> bool | None:
        """Move ``item`` to its next state; its resulting enabled state, or None when nothing changed."""
        before, on = self.state(item), self.inherited_enabled(item)
        state = {INHERIT: UNLOAD if on else LOAD, UNLOAD: LOAD if on else INHERIT,
                 LOAD: INHERIT if on else UNLOAD}[before]
        project = read_settings("project", self.agent_dir, self.cwd)
        if project is None:
            return None
        if item.origin == "top-level":
            self._set_top_level(project, item, state)
        elif not self._set_package(project, item, state):
            return None
        _write("project", project, self.agent_dir, self.cwd)
        return on if state == INHERIT else state == LOAD

    def _set_top_level(self, project: JsonObject, item: ResourceItem, state: str) -> None:
        inherited = self.is_inherited(item)
        pattern = item.path if inherited else self._pattern_for_project(item)
        patterns = self._top_patterns(item)
        updated = [e for e in list_of(project, item.kind) if isinstance(e, str)
                   and not (e[:1] in "!+-" and _target(e) in patterns)
                   and not (state == INHERIT and inherited and _target(e) == pattern)]
        if state != INHERIT:
            if inherited and item.source != "builtin" and pattern not in updated:
                updated.append(pattern)  # the project names the user's file, then filters it
            updated.append(("+" if state == LOAD else "-") + pattern)
        project[item.kind] = updated

    def _set_package(self, project: JsonObject, item: ResourceItem, state: str) -> bool:
        packages, _, index = self._package_entry(project, item)
        if index is None:
            if state == INHERIT:
                return False
            packages.append(self._override_entry(item))
            index = len(packages) - 1
        pattern = _package_pattern(item)
        new = None if state == INHERIT else ("+" if state == LOAD else "-") + pattern
        entry = _set_filter(packages[index], item.kind, pattern, new)
        if entry is None:
            del packages[index]
        else:
            packages[index] = entry
        project["packages"] = packages
        return True

    def _package_entry(self, project: JsonObject, item: ResourceItem) -> tuple[list[Any], Any, int | None]:
        packages = list_of(project, "packages")
        index = next((i for i, p in enumerate(packages) if (s := _source(p)) is not None
                      and self._same_package(item.source, item.scope, s, "project")), None)
        return packages, (packages[index] if index is not None else None), index

    def _same_package(self, left: str, left_scope: str, right: str, right_scope: str) -> bool:
        if left == right:
            return True
        if not (_is_local(left) and _is_local(right)):
            return False
        return self._resolve(left, left_scope) == self._resolve(right, right_scope)

    def _resolve(self, source: str, scope: str) -> Path:
        return src.resolve_local(source.strip(), top_base(scope, self.agent_dir, self.cwd))

    def _override_entry(self, item: ResourceItem) -> JsonObject:
        """The ``autoload: false`` entry that carries the project's filters of a user package."""
        if not _is_local(item.source):
            return {"source": item.source, "autoload": False}
        path = self._resolve(item.source, item.scope)
        return {"source": os.path.relpath(path, top_base("project", self.agent_dir, self.cwd)), "autoload": False}

    def _pattern_for_project(self, item: ResourceItem) -> str:
        if item.scope != "project" or item.source == "builtin":
            return item.path
        return _own_pattern(item, self.agent_dir, self.cwd)

    def _top_patterns(self, item: ResourceItem) -> set[str]:
        """Every spelling by which a project entry may name ``item``."""
        patterns = {self._pattern_for_project(item), item.path}
        if item.source != "builtin":
            patterns.add(os.path.relpath(item.path, top_base("project", self.agent_dir, self.cwd)))
            if item.base_dir is not None:
                patterns.add(os.path.relpath(item.path, item.base_dir))
        return patterns


def _state_of(entries: list[Any], patterns: set[str], empty_unloads: bool) -> str:
    if not entries and empty_unloads:
        return UNLOAD
    state = INHERIT
    for entry in entries:
        if isinstance(entry, str) and _target(entry) in patterns:
            state = UNLOAD if entry[:1] in "!-" else LOAD
    return state


def _is_local(source: str) -> bool:
    return isinstance(src.parse_source(source), src.LocalSource)
