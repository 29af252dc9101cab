"""Which files of a package are its extensions, skills, prompt templates and themes (pi 1.6.0's rules).

A ``pi`` object in ``package.json`` that lists any of ``extensions``/``skills``/``prompts``/``themes``
is the manifest: each list names files, folders or globs relative to the package root, ``!glob``
excludes, ``+path`` puts back one exact path and ``-path`` removes one. Without such a list the
conventional folders of those names are scanned. A settings entry's object form (``{"source": ...,
"skills": [...]}``) narrows further with the same pattern language; ``[]`` loads none of a type. A
project entry with ``"autoload": false`` only overrides the files its patterns name (``delta_states``).

Python extensions are this implementation's addition: ``pi.python`` lists them like ``pi.extensions``
(pi ignores the key), and without a manifest the ``extensions/`` folder's ``*.py`` files and
``<name>/__init__.py`` packages are found beside the ``.ts``/``.js`` ones (pi ignores them too).
"""

from __future__ import annotations

import glob
import json
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pi_coding_agent.coding.resources.resource_files import collect_pi_mode

RESOURCE_TYPES = ("extensions", "skills", "prompts", "themes")
PYTHON_KEY = "python"
_IGNORED_DIRS = ("node_modules",)


def read_manifest(root: Path) -> dict[str, Any] | None:
    """The ``pi`` object of ``<root>/package.json`` with its string-list fields, or None."""
    try:
        data = json.loads((root / "package.json").read_text(encoding="utf-8-sig"))
    except (OSError, ValueError):
        return None
    pi = data.get("pi") if isinstance(data, dict) else None
    if not isinstance(pi, dict):
        return None
    return {key: value for key, value in pi.items()
            if key in (*RESOURCE_TYPES, PYTHON_KEY) and isinstance(value, list)
            and all(isinstance(v, str) for v in value)}


def package_resources(root: Path) -> dict[str, list[Path]] | None:
    """Declared files per resource type (``extensions`` holds Python ones too), or None when the
    folder declares nothing (no manifest lists, no conventional folder); a settings entry's patterns
    narrow them (``narrowed``)."""
    manifest = read_manifest(root) or {}
    declares = any(t in manifest for t in RESOURCE_TYPES)
    if not declares and not any((root / t).is_dir() for t in RESOURCE_TYPES) and PYTHON_KEY not in manifest:
        return None
    out: dict[str, list[Path]] = {}
    for kind in RESOURCE_TYPES:
        out[kind] = _declared(root, kind, manifest, declares)
        if kind == "extensions":
            out[kind] += _declared_python(root, manifest, declares)
    return out


def narrowed(files: list[Path], patterns: object, root: Path) -> list[Path]:
    """A settings entry's patterns of one type applied to its package's files: none (not a list)
    keeps them all, ``[]`` none."""
    if not isinstance(patterns, list):
        return files
    enabled = apply_patterns(files, [str(p) for p in patterns], root) if patterns else set()
    return [f for f in files if f in enabled]


def _declared(root: Path, kind: str, manifest: dict[str, Any], declares: bool) -> list[Path]:
    if declares:
        return _from_entries(manifest.get(kind) or [], root, _COLLECTORS[kind])
    folder = root / kind
    return _COLLECTORS[kind](folder) if folder.is_dir() else []


def _declared_python(root: Path, manifest: dict[str, Any], declares: bool) -> list[Path]:
    if PYTHON_KEY in manifest:
        return _from_entries(manifest[PYTHON_KEY], root, python_entries)
    return [] if declares else python_entries(root / "extensions")


def _from_entries(entries: Sequence[str], root: Path, collect: Callable[[Path], list[Path]]) -> list[Path]:
    """Files of a manifest list: plain entries and globs, then its own ``!``/``+``/``-`` patterns."""
    found: list[Path] = []
    for entry in entries:
        if entry[:1] in "!+-":
            continue
        paths = expand_glob(entry, root) if _has_glob(entry) else [Path(os.path.normpath(root / entry))]
        for path in paths:
            if path.is_file():
                found.append(path)
            elif path.is_dir():
                found += collect(path)
    overrides = [e for e in entries if e[:1] in "!+-"]
    enabled = apply_patterns(found, overrides, root)
    return [f for f in found if f in enabled]


def expand_glob(pattern: str, root: Path) -> list[Path]:
    """Matches of a glob under ``root``, hidden segments skipped, in byte order."""
    matches = glob.glob(pattern, root_dir=root, recursive=True)
    return sorted(Path(os.path.normpath(root / m)) for m in matches
                  if not any(part.startswith(".") and part != ".." for part in Path(m).parts))


# ---------------------------------------------------------------------- patterns


def apply_patterns(files: Sequence[Path], patterns: Sequence[str], base: Path) -> set[Path]:
    """pi's four steps: plain globs include (all when none), ``!`` excludes, ``+`` re-adds an exact
    path, ``-`` removes an exact path."""
    includes = [p for p in patterns if p[:1] not in "!+-"]
    excludes = [p[1:] for p in patterns if p.startswith("!")]
    force_in = [p[1:] for p in patterns if p.startswith("+")]
    force_out = [p[1:] for p in patterns if p.startswith("-")]
    result = [f for f in files if not includes or _matches_glob(f, includes, base)]
    result = [f for f in result if not excludes or not _matches_glob(f, excludes, base)]
    result += [f for f in files if f not in result and force_in and _matches_exact(f, force_in, base)]
    return {f for f in result if not (force_out and _matches_exact(f, force_out, base))}


def delta_states(files: Sequence[Path], patterns: Sequence[str], base: Path) -> dict[Path, bool]:
    """An ``autoload: false`` project entry's word on the files its patterns name (the last naming
    pattern wins): ``+path`` and plain globs load, ``-path`` and ``!glob`` unload; files it does not
    name are absent, left to the user's entry."""
    states: dict[Path, bool] = {}
    for pattern in patterns:
        exact, target = pattern[:1] in "+-", pattern[1:] if pattern[:1] in "!+-" else pattern
        for file in files:
            if _matches_exact(file, [target], base) if exact else _matches_glob(file, [target], base):
                states[file] = pattern[:1] not in "!-"
    return states


def _spellings(file: Path, base: Path, with_name: bool) -> list[str]:
    """How a pattern may name a file: relative, (bare name), absolute; a skill also by its folder."""
    targets = [file, file.parent] if file.name == "SKILL.md" else [file]
    out: list[str] = []
    for target in targets:
        out += [os.path.relpath(target, base), str(target)] + ([target.name] if with_name else [])
    return out


def _matches_glob(file: Path, patterns: Sequence[str], base: Path) -> bool:
    names = _spellings(file, base, with_name=True)
    return any(glob_regex(os.path.normpath(os.path.expanduser(p))).fullmatch(n) for p in patterns for n in names)


def _matches_exact(file: Path, patterns: Sequence[str], base: Path) -> bool:
    names = _spellings(file, base, with_name=False)
    return any(os.path.normpath(os.path.expanduser(p.removeprefix("./"))) in names for p in patterns)


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A minimatch-style glob: ``**`` crosses folders, ``*`` and ``?`` stay inside one."""
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        else:
            char = pattern[i]
            out.append("[^/]*" if char == "*" else "[^/]" if char == "?" else re.escape(char))
            i += 1
    return re.compile("".join(out))


def _has_glob(entry: str) -> bool:
    return "*" in entry or "?" in entry


# ---------------------------------------------------------------------- conventional folders


def _visible(directory: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(directory) as it:
            return sorted((e for e in it if not e.name.startswith(".") and e.name not in _IGNORED_DIRS),
                          key=lambda e: e.name)
    except OSError:
        return []


def _files_with(suffix: str) -> Callable[[Path], list[Path]]:
    """Every ``*<suffix>`` file below a folder (prompts: ``.md``, themes: ``.json``)."""
    def collect(directory: Path) -> list[Path]:
        found: list[Path] = []
        for entry in _visible(directory):
            path = Path(entry.path)
            if path.is_dir():
                found += collect(path)
            elif entry.name.endswith(suffix) and path.is_file():
                found.append(path)
        return found
    return collect


def extension_entries(directory: Path) -> list[Path]:
    """pi's extension discovery in a folder: its own entry points if it has some, else its
    ``.ts``/``.js`` files and the entry points of its sub-folders."""
    own = _entry_points(directory)
    if own is not None:
        return own
    found: list[Path] = []
    for entry in _visible(directory):
        path = Path(entry.path)
        if path.is_file() and entry.name.endswith((".ts", ".js")):
            found.append(path)
        elif path.is_dir():
            found += _entry_points(path) or []
    return found


def _entry_points(directory: Path) -> list[Path] | None:
    """A folder's ``pi.extensions`` files that exist, else ``index.ts``/``index.js``, else None."""
    listed = (read_manifest(directory) or {}).get("extensions") or []
    existing = [p for p in (Path(os.path.normpath(directory / e)) for e in listed) if p.exists()]
    if existing:
        return existing
    for name in ("index.ts", "index.js"):
        if (directory / name).exists():
            return [directory / name]
    return None


def python_entries(directory: Path) -> list[Path]:
    """Python extensions in a folder: ``*.py`` files and ``<name>/__init__.py`` packages."""
    if (directory / "__init__.py").is_file():
        return [directory / "__init__.py"]
    found: list[Path] = []
    for entry in _visible(directory):
        path = Path(entry.path)
        if entry.name.startswith("_"):
            continue
        if entry.name.endswith(".py") and path.is_file():
            found.append(path)
        elif (path / "__init__.py").is_file():
            found.append(path / "__init__.py")
    return found


_COLLECTORS: dict[str, Callable[[Path], list[Path]]] = {
    "extensions": extension_entries,
    "skills": collect_pi_mode,
    "prompts": _files_with(".md"),
    "themes": _files_with(".json"),
}
