"""Finding and importing extensions: Python modules exposing ``setup(pi)``.

Discovery is a few directory scans, so a session without extensions pays nothing more: the dispatch
machinery (``runner``, ``api``, ``context``) is imported only when at least one extension was found.
Order (first occurrence of a real path wins): ``-e/--extension`` paths, then the ``extensions``
setting and discovered directories, project before user (the project only when trusted), less what
that scope's ``!glob`` / ``+path`` / ``-path`` entries of the setting disable.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, NamedTuple

from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.resources.resource_paths import dedupe_by_real_path, is_enabled

if TYPE_CHECKING:
    from pi_coding_agent.coding.packages.resolve import PackageSet
    from pi_coding_agent.coding.resources.settings import SettingsPath

PROJECT_DIR = ".pi"
PACKAGE_ENTRY = "__init__.py"
TYPESCRIPT_SUFFIXES = (".ts", ".js", ".mts", ".mjs", ".cts", ".cjs")  # run in the Node.js sidecar
_TS_ENTRIES = ("index.ts", "index.js")


class ExtensionSource(NamedTuple):
    """One extension (a file, or an SDK caller's ``setup`` function) with the ``sourceInfo``
    get_commands reports for its commands."""

    path: Path
    source: str  # "cli" | "local" | "auto" | "sdk"
    scope: str  # "temporary" | "project" | "user"
    base_dir: Path | None
    setup: Callable[[Any], Any] | None = None  # in-process: called instead of importing ``path``
    origin: str = "top-level"  # "package": ``source`` is then the package source as configured

    def source_info(self) -> JsonObject:
        info: JsonObject = {"path": str(self.path), "source": self.source, "scope": self.scope, "origin": self.origin}
        if self.base_dir is not None:
            info["baseDir"] = str(self.base_dir)
        return info


class LoadError(Exception):
    """An extension could not be imported or its ``setup`` raised."""


def _entries_in(directory: Path) -> list[Path]:
    """``*.py`` files and ``<package>/__init__.py`` one level down, in name order; pi's ``*.ts``/``*.js``
    files and ``<folder>/index.ts`` (or ``.js``) too, for the TypeScript sidecar."""
    try:
        with os.scandir(directory) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError:
        return []
    found: list[Path] = []
    for entry in entries:
        path = Path(entry.path)
        if entry.name.startswith((".", "_")):
            continue
        if entry.name.endswith((".py", ".ts", ".js")) and os.path.isfile(path):
            found.append(path)
        elif os.path.isfile(path / PACKAGE_ENTRY):
            found.append(path / PACKAGE_ENTRY)
        else:
            index = next((path / name for name in _TS_ENTRIES if os.path.isfile(path / name)), None)
            if index is not None:
                found.append(index)
    return found


def _explicit(path: Path) -> list[Path]:
    """A path named by a flag or a setting: a file, a package folder, or a folder of extensions."""
    if path.is_dir():
        package = path / PACKAGE_ENTRY
        return [package] if package.is_file() else _entries_in(path)
    return [path]


def discover(cwd: Path, agent_dir: Path, trusted: bool, cli_paths: list[str],
             settings_paths: list[SettingsPath], include_discovered: bool,
             packages: PackageSet | None = None) -> list[ExtensionSource]:
    """Every extension to load, in load order (see module docstring). ``include_discovered=False``
    is ``--no-extensions``: only the ``-e`` paths (and ``-e`` packages) remain. Package extensions
    follow: ``-e`` ones right after the ``-e`` paths, configured ones after everything else."""
    consumed = set(packages.cli_arguments) if packages is not None else set()
    candidates = [ExtensionSource(p, "cli", "temporary", None)  # builtin:<name> is not a file (llama_command)
                  for raw in cli_paths if not raw.startswith("builtin:") and raw not in consumed
                  for p in _explicit(_resolve(raw, cwd))]
    package_sources = package_extensions(packages) if packages is not None else []
    candidates += [s for s in package_sources if s.scope == "temporary"]
    if include_discovered:
        switched_off: set[str] = set()  # a project's off switch holds for the user's copy too
        for scope, root in (("project", cwd / PROJECT_DIR), ("user", agent_dir)):
            if scope == "project" and not trusted:
                continue
            own = [e for e in settings_paths if e.scope == scope]
            found = [ExtensionSource(p, "local", scope, None) for entry in own if entry.entry[:1] not in "!+-"
                     for p in _explicit(_resolve(entry.entry, entry.base_dir))]
            found += [ExtensionSource(p, "auto", scope, root) for p in _entries_in(root / "extensions")]
            filters = [e for e in own if e.entry[:1] in "!+-"]  # what ``pi config`` writes, say
            for source in found:
                if not is_enabled(source.path, filters, source.base_dir or root):
                    switched_off.add(os.path.realpath(source.path))
                elif os.path.realpath(source.path) not in switched_off:
                    candidates.append(source)
        candidates += [s for s in package_sources if s.scope != "temporary"]
    return dedupe_by_real_path(candidates)


def package_extensions(packages: PackageSet) -> list[ExtensionSource]:
    """The packages' extension files, then one failing source per skipped package, so the runner
    reports each skip as it reports a load failure (a stderr line and an ``extension_error``)."""
    out = [ExtensionSource(f.path, f.source, f.scope, f.base_dir, origin="package") for f in packages.extensions]
    if packages.modules:
        from pi_coding_agent.coding.packages.pypi import module_setup

        out += [ExtensionSource(m.path, source, scope, m.target, module_setup(m), origin="package")
                for m, source, scope in packages.modules]
    for source, reason in packages.skipped:
        out.append(ExtensionSource(Path(source), source, "temporary", None, _skipped(reason), origin="package"))
    return out


def _skipped(reason: str) -> Callable[[object], object]:
    def setup(_pi: object) -> None:
        raise LoadError(f"package skipped: {reason}")
    return setup


def _resolve(raw: str, base: Path) -> Path:
    return Path(os.path.normpath(base / os.path.expanduser(raw.strip())))


_handed_over: dict[Path, ModuleType] = {}  # imported for the trust question, for the session's load


def hand_over(path: Path, module: ModuleType) -> None:
    """Keep a module the ``project_trust`` pass imported, so the session's load does not run it twice."""
    _handed_over[path] = module


def import_extension(path: Path) -> ModuleType:
    """Import one extension under a private module name (two files may share a base name)."""
    if (module := _handed_over.pop(path, None)) is not None:
        return module
    if not path.is_file():
        raise LoadError(f"Extension path does not exist: {path}")
    is_package = path.name == PACKAGE_ENTRY
    name = f"pi_extension_{abs(hash(str(path))):x}_{(path.parent if is_package else path).stem}"
    spec = importlib.util.spec_from_file_location(
        name, path, submodule_search_locations=[str(path.parent)] if is_package else None)
    if spec is None or spec.loader is None:
        raise LoadError(f"Not a Python module: {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    if not callable(getattr(module, "setup", None)):
        raise LoadError(f"Extension does not define a setup(pi) function: {path}")
    return module


def in_process(setup: Callable[[object], object]) -> ExtensionSource:
    """An SDK caller's ``setup(pi)`` as an extension; its name stands in for a path in reports."""
    name = getattr(setup, "__qualname__", None) or type(setup).__name__
    return ExtensionSource(Path(f"<sdk:{name}>"), "sdk", "temporary", None, setup)


def builtin_enabled(name: str, settings_entries: Sequence[SettingsPath], no_extensions: bool,
                    cli_extensions: list[str]) -> bool:
    """Whether pi's bundled extension ``builtin:<name>`` (``mcp``, ``llama.cpp``, ``codemode``,
    ``tool-search``) is on, as pi decides: ``-e builtin:<name>`` turns it on; else ``--no-extensions``
    turns it off; else the settings' ``extensions`` filters decide (``extensions/builtins``)."""
    from pi_coding_agent.coding.extensions.builtins import builtin_state

    if f"builtin:{name}" in (e.strip() for e in cli_extensions):
        return True
    if no_extensions:
        return False
    by_scope = {scope: [p.entry for p in settings_entries if p.scope == scope] for scope in ("user", "project")}
    return builtin_state(name, by_scope["user"], by_scope["project"])[0]
