"""Where skills and prompt templates come from, in pi's precedence order (first wins a name clash).

1. project settings entries, 2. project directories, 3. user settings entries, 4. user directories,
then the ``--skill``/``--prompt-template`` paths. Settings lists may also hold filters that apply to
their own scope (files of the listed entries and of that scope's directories):
``!glob`` disables matches, ``+path`` re-enables an exact path, ``-path`` disables an exact path. A
user file the project's list names and disables stays off (``scope_files``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from fnmatch import fnmatchcase
from pathlib import Path
from typing import NamedTuple, Protocol, TypeVar

from pi_coding_agent.coding.resources.settings import SettingsPath

Collector = Callable[[Path], list[Path]]


class ResourceFile(NamedTuple):
    """One candidate file with the ``sourceInfo`` facts get_commands reports for it."""

    path: Path
    source: str  # "auto" | "local"
    scope: str  # "user" | "project" | "temporary"
    base_dir: Path | None  # sourceInfo.baseDir (absent for settings entries)
    origin: str = "top-level"  # "package" for a package's files (then ``source`` is the package source)


def resolve_entry(entry: str, base_dir: Path) -> Path:
    """An entry as written in settings or on the command line, made absolute against ``base_dir``."""
    return Path(os.path.normpath(base_dir / os.path.expanduser(entry.strip())))


def sorted_entries(directory: Path) -> list[os.DirEntry[str]]:
    """Directory entries in byte order (the order pi sees), or [] when unreadable."""
    try:
        with os.scandir(directory) as it:
            return sorted(it, key=lambda e: e.name)
    except OSError:
        return []


def entry_kind(entry: os.DirEntry[str]) -> tuple[bool, bool]:
    """(is_dir, is_file) following symlinks; a broken link is neither."""
    try:
        return entry.is_dir(), entry.is_file()
    except OSError:
        return False, False


def settings_files(entries: Sequence[SettingsPath | str], default_base: Path, collect: Collector,
                   scope: str) -> list[ResourceFile]:
    """Files of the plain entries of one scope, minus what that scope's filters disable."""
    return scope_files(entries, default_base, collect, scope)[0]


def scope_files(entries: Sequence[SettingsPath | str], default_base: Path, collect: Collector,
                scope: str) -> tuple[list[ResourceFile], set[str]]:
    """One walk of a scope's entries: the files its filters leave on, and the real paths of those they
    switch off (another scope's copy of such a file stays off too: a project unloading a user file,
    as ``pi config`` writes it)."""
    states = _settings_states(entries, default_base, collect, scope)
    return ([ResourceFile(file, "local", scope, None) for file, on in states if on],
            {os.path.realpath(file) for file, on in states if not on})


def without_overridden(files: Sequence[ResourceFile], masked: set[str]) -> list[ResourceFile]:
    """``files`` less the user's ones a project override switched off."""
    if not masked:
        return list(files)
    return [f for f in files if f.scope != "user" or os.path.realpath(f.path) not in masked]


def _settings_states(entries: Sequence[SettingsPath | str], default_base: Path, collect: Collector,
                     scope: str) -> list[tuple[Path, bool]]:
    layer = [_as_settings_path(e, default_base) for e in entries]
    layer = [e for e in layer if e.scope == scope]
    filters = [e for e in layer if e.entry[:1] in "!+-"]
    return [(file, is_enabled(file, filters, item.base_dir)) for item in layer
            if item.entry[:1] not in "!+-" and not _is_glob(item.entry)
            for file in _collect_path(resolve_entry(item.entry, item.base_dir), collect)]


def auto_files(dirs: Iterable[tuple[Path, Path]], collect: Collector, scope: str,
               entries: Sequence[SettingsPath | str], default_base: Path) -> list[ResourceFile]:
    """Files found in ``(directory, sourceInfo baseDir)`` pairs, filtered by the scope's settings."""
    filters = [e for e in (_as_settings_path(x, default_base) for x in entries)
               if e.scope == scope and e.entry[:1] in "!+-"]
    out: list[ResourceFile] = []
    for directory, base_dir in dirs:
        for file in collect(directory):
            if is_enabled(file, filters, base_dir):
                out.append(ResourceFile(file, "auto", scope, base_dir))
    return out


def cli_files(paths: Sequence[str], cwd: Path, collect_one: Callable[[Path], list[Path]],
              base_of: Callable[[Path, Path], Path]) -> list[ResourceFile]:
    """``--skill``/``--prompt-template`` paths (resolved against the cwd; missing ones skipped)."""
    out: list[ResourceFile] = []
    for raw in paths:
        path = resolve_entry(raw, cwd)
        for file in collect_one(path):
            out.append(ResourceFile(file, "local", "temporary", base_of(path, file)))
    return out


class _HasPath(Protocol):
    @property
    def path(self) -> Path: ...


_Item = TypeVar("_Item", bound=_HasPath)


def dedupe_by_real_path(files: Iterable[_Item]) -> list[_Item]:
    """Drop a file already listed under another path (symlink) or another source."""
    seen: set[str] = set()
    out: list[_Item] = []
    for item in files:
        key = os.path.realpath(item.path)
        if key not in seen:
            seen.add(key)
            out.append(item)
    return out


def is_enabled(file: Path, filters: Sequence[SettingsPath], base_dir: Path) -> bool:
    """Apply ``!glob``, then ``+exact``, then ``-exact`` (the later kinds win)."""
    enabled = True
    for prefix, decision in (("!", False), ("+", True), ("-", False)):
        patterns = [f.entry[1:] for f in filters if f.entry.startswith(prefix)]
        if not patterns:
            continue
        names = _match_names(file, base_dir)
        if prefix == "!":
            hit = any(fnmatchcase(n, p) for p in patterns for n in names)
        else:
            hit = any(os.path.expanduser(p).rstrip("/") in names for p in patterns)
        if hit:
            enabled = decision
    return enabled


def _match_names(file: Path, base_dir: Path) -> set[str]:
    """Spellings a filter may use: relative to the base dir, bare name, absolute (and the skill dir's)."""
    targets = [file]
    if file.name == "SKILL.md":
        targets.append(file.parent)
    names: set[str] = set()
    for target in targets:
        names.update({os.path.relpath(target, base_dir), target.name, str(target)})
    return names


def _as_settings_path(entry: SettingsPath | str, default_base: Path) -> SettingsPath:
    return entry if isinstance(entry, SettingsPath) else SettingsPath(entry, default_base, "user")


def _is_glob(entry: str) -> bool:
    return any(c in entry for c in "*?[")


def _collect_path(path: Path, collect: Collector) -> list[Path]:
    if path.is_dir():
        return collect(path)
    return [path] if path.is_file() else []
