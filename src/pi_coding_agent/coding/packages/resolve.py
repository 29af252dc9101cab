"""The packages a session loads: ``packages`` of the settings files (project ones only once the project
is trusted; a project entry replaces a user entry of the same identity) and ``-e`` package sources,
with each package's enabled files per resource type.

A configured npm or git package that is not installed yet is installed here, as pi does at start-up;
when that fails (no network, no ``npm``/``git``) or offline mode is on (``PI_OFFLINE``), the package
is skipped with a reason, and the run goes on. ``-e`` packages live in pi's temporary cache; an
unpinned one is refreshed on each start unless offline (npm and PyPI ones when the index offers
another version, git ones when not at their ref), the cached copy kept when that fails.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.packages import sources as src
from pi_coding_agent.coding.packages.manifest import RESOURCE_TYPES, delta_states, narrowed, package_resources
from pi_coding_agent.coding.resources.resource_paths import ResourceFile

if TYPE_CHECKING:
    from pi_coding_agent.coding.packages.install import Installer
    from pi_coding_agent.coding.packages.pypi import PythonModule

_OFFLINE_VALUES = ("1", "true", "yes")


@dataclass
class PackageSet:
    """Resource files of every loaded package, in load order, and the packages skipped."""

    extensions: list[ResourceFile] = field(default_factory=list)
    skills: list[ResourceFile] = field(default_factory=list)
    prompts: list[ResourceFile] = field(default_factory=list)
    themes: list[ResourceFile] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (source, reason)
    install_failures: list[tuple[str, str, str]] = field(default_factory=list)  # (source, scope, message)
    warnings: list[str] = field(default_factory=list)
    cli_arguments: list[str] = field(default_factory=list)  # the ``-e`` arguments taken as packages
    modules: list[tuple[PythonModule, str, str]] = field(default_factory=list)  # PyPI extensions: (module, source, scope)
    claimed: dict[str, set[Path]] = field(default_factory=dict)  # package folder -> files an override named

    def add(self, kind: str, files: list[ResourceFile]) -> None:
        getattr(self, kind).extend(files)


def offline() -> bool:
    return os.environ.get("PI_OFFLINE", "").lower() in _OFFLINE_VALUES


def configured(global_data: JsonObject, project_data: JsonObject) -> list[tuple[object, str]]:
    """``(entry, scope)`` of both settings files, project first (an entry is a string or an object)."""
    out: list[tuple[object, str]] = []
    for data, scope in ((project_data, "project"), (global_data, "user")):
        entries = data.get("packages")
        if isinstance(entries, list):
            out += [(e, scope) for e in entries if isinstance(e, str) or isinstance(e.get("source"), str)
                    if isinstance(e, (str, dict))]
    return out


def source_of(entry: Any) -> str:
    return entry if isinstance(entry, str) else str(entry["source"])


def is_delta(entry: object, scope: str) -> bool:
    """A project entry that overrides the user's entry of its package instead of replacing it."""
    return scope == "project" and isinstance(entry, dict) and entry.get("autoload") is False


def dedupe(entries: list[tuple[object, str]], agent_dir: Path, cwd: Path) -> list[tuple[object, str]]:
    """One entry per package identity; the project's wins over the user's, except that an
    ``autoload: false`` project entry keeps the user's after it (its base)."""
    seen: dict[str, int] = {}
    out: list[tuple[object, str]] = []
    for entry, scope in entries:
        key = identity_of(entry, scope, agent_dir, cwd)
        if key not in seen:
            seen[key] = len(out)
            out.append((entry, scope))
        elif scope == "project":
            out[seen[key]] = (entry, scope)
        elif scope == "user" and is_delta(*out[seen[key]]):
            out.append((entry, scope))
    return out


def identity_of(entry: object, scope: str, agent_dir: Path, cwd: Path) -> str:
    return src.identity(source_of(entry), src.base_dir(scope, agent_dir, cwd))


def delta_base(entry: object, scope: str, entries: Sequence[tuple[object, str]], agent_dir: Path,
               cwd: Path) -> tuple[str, str]:
    """Where an entry's files come from, ``(source, scope)``: for an ``autoload: false`` project entry
    the user's entry of the same package, when there is one."""
    if is_delta(entry, scope):
        key = identity_of(entry, scope, agent_dir, cwd)
        base = next((e for e, s in entries if s == "user" and identity_of(e, s, agent_dir, cwd) == key), None)
        if base is not None:
            return source_of(base), "user"
    return source_of(entry), scope


def resolve_packages(entries: Sequence[tuple[object, str]], agent_dir: Path, cwd: Path,
                     npm_command: Sequence[str] | None = None) -> PackageSet:
    """Every package's files (installing missing ones); ``entries`` are ``(entry, scope)`` with
    scope ``user``, ``project`` or ``temporary`` (``-e``)."""
    found = PackageSet()
    installer: Installer | None = None
    deduped = dedupe(list(entries), agent_dir, cwd)
    for entry, scope in deduped:
        source, (base_source, base_scope) = source_of(entry), delta_base(entry, scope, deduped, agent_dir, cwd)
        parsed = src.parse_source(base_source)
        try:
            root = src.installed_path(parsed, base_scope, agent_dir, cwd)
            if not isinstance(parsed, src.LocalSource):
                from pi_coding_agent.coding.packages.install import Installer

                installer = installer or Installer(agent_dir, cwd, npm_command)
                root = _ensure_installed(installer, base_source, parsed, base_scope, root, found)
        except Exception as exc:  # any failure skips this package, named, and the run goes on
            found.skipped.append((source, str(exc) or type(exc).__name__))
            found.install_failures.append((source, scope, str(exc) or type(exc).__name__))
            continue
        if not root.exists():
            found.skipped.append((source, f"Package path does not exist: {root}"))
            continue
        _collect(found, root, entry, source, scope)
    return found


def _ensure_installed(installer: Installer, source: str, parsed: src.Source, scope: str, root: Path,
                      found: PackageSet) -> Path:
    """Install a missing package; refresh an unpinned ``-e`` one (keeping the cache when that fails)."""
    from pi_coding_agent.coding.packages.install import PackageError

    if not root.exists() or not _version_matches(parsed, root):
        if offline():
            raise PackageError("not installed and offline mode is on")
        _install(installer, parsed, scope)
        return root
    if scope != "temporary" or offline():
        return root
    try:
        if isinstance(parsed, src.NpmSource) and not parsed.pinned:
            if _npm_has_update(installer, parsed, root):
                installer.install_npm(parsed, scope, parsed.spec if parsed.version else f"{parsed.name}@latest")
        elif isinstance(parsed, src.GitSource) and not installer.git_checked_out(parsed, root):
            installer.update_git(parsed, scope)
        elif isinstance(parsed, src.PypiSource) and not parsed.pinned and _pypi_has_update(installer, parsed, root):
            installer.install_pypi(parsed, scope)
    except PackageError as exc:
        found.warnings.append(f"Warning: could not refresh {source}: {exc}; using the cached copy")
    return root


def _version_matches(parsed: src.Source, root: Path) -> bool:
    """An installed npm package must name its version and answer the source's version or range; a
    PyPI one must be installed, at its pinned version if any."""
    if isinstance(parsed, src.PypiSource):
        from pi_coding_agent.coding.packages.pypi import satisfied

        return satisfied(parsed, root)
    if not isinstance(parsed, src.NpmSource):
        return True
    from pi_coding_agent.coding.packages.install import installed_npm_version
    from pi_coding_agent.coding.packages.versions import installed_matches

    return installed_matches(installed_npm_version(root), parsed.version)


def _npm_has_update(installer: Installer, parsed: src.NpmSource, root: Path) -> bool:
    """A ``-e`` refresh: the registry has a newer version inside the range (not asked: no refresh)."""
    from pi_coding_agent.coding.packages.install import installed_npm_version
    from pi_coding_agent.coding.packages.versions import is_newer

    installed = installed_npm_version(root)
    latest = installer.latest_npm_version(parsed) if installed is not None else None
    return latest is not None and installed is not None and is_newer(latest, installed)


def _pypi_has_update(installer: Installer, parsed: src.PypiSource, root: Path) -> bool:
    """A ``-e`` refresh: pip would now pick another version than the cached one (not asked: no refresh)."""
    from pi_coding_agent.coding.packages.pypi import installed_version

    available = installer.latest_pypi_version(parsed)
    return available is not None and available != installed_version(parsed, root)


def _install(installer: Installer, parsed: src.Source, scope: str) -> None:
    if isinstance(parsed, src.NpmSource):
        installer.install_npm(parsed, scope)
    elif isinstance(parsed, src.GitSource):
        installer.install_git(parsed, scope)
    elif isinstance(parsed, src.PypiSource):
        installer.install_pypi(parsed, scope)


def _collect(found: PackageSet, root: Path, entry: object, source: str, scope: str) -> None:
    """A package's files with their ``sourceInfo`` facts; a plain file is one extension."""
    if isinstance(src.parse_source(source), src.PypiSource):
        _collect_pypi(found, root, source, scope)
        return
    if root.is_file():
        found.extensions.append(ResourceFile(root, source, scope, root.parent, "package"))
        return
    states = entry_states(root, entry, scope, found.claimed.setdefault(str(root), set()))
    if states is None:
        found.skipped.append((source, f"no extensions, skills, prompts or themes found in {root}"))
        return
    for kind, files in states.items():
        found.add(kind, [ResourceFile(p, source, scope, root, "package") for p, on in files.items() if on])


def entry_states(root: Path, entry: object, scope: str, claimed: set[Path]) -> dict[str, dict[Path, bool]] | None:
    """The package files an entry decides, per resource type, each with whether it loads; None when
    the package declares nothing. An ``autoload: false`` project entry decides only the files its
    patterns name and claims them (it comes before the user entry it overrides); any other entry
    decides every declared file not claimed yet, by its own patterns."""
    delta = is_delta(entry, scope)
    narrowing = entry if isinstance(entry, dict) else None
    declared = package_resources(root)
    if declared is None:
        if delta or narrowing is None:
            return None
        declared = {kind: [] for kind in RESOURCE_TYPES}  # an object entry of an empty package: nothing
    out: dict[str, dict[Path, bool]] = {}
    for kind, files in declared.items():
        if delta:
            out[kind] = delta_states(files, pattern_list(narrowing, kind), root)
            claimed.update(out[kind])
        else:
            enabled = set(narrowed(files, narrowing.get(kind) if narrowing is not None else None, root))
            out[kind] = {f: f in enabled for f in files if f not in claimed}
    return out


def pattern_list(entry: Any, kind: str) -> list[str]:
    """An object entry's patterns of one resource type ([] when none)."""
    value = entry.get(kind) if isinstance(entry, dict) else None
    return [str(p) for p in value] if isinstance(value, list) else []


def _collect_pypi(found: PackageSet, root: Path, source: str, scope: str) -> None:
    """The extension modules a PyPI distribution declares (none: the package is skipped, named)."""
    from pi_coding_agent.coding.packages.pypi import ENTRY_POINT_GROUP, extension_modules

    parsed = src.parse_source(source)
    assert isinstance(parsed, src.PypiSource)
    modules = extension_modules(parsed, root)
    if not modules:
        found.skipped.append((source, f"the distribution declares no {ENTRY_POINT_GROUP} entry points"))
    found.modules += [(module, source, scope) for module in modules]
