"""``pi install|remove|uninstall|update|list``: pi 1.6.0's package commands, messages and exit codes.

``install`` installs (npm, git) or checks (local) the source, then adds it to ``packages`` of the user
settings (``-l``/``--local``: the project's, which needs a trusted project); a local path is written
relative to that settings file's folder, as pi writes it. ``remove`` deletes the install and the entry.
``update`` reconciles packages (``--extensions``, or one ``<source>``); pi's self-update and model
catalog refresh are not part of this implementation and say so.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from pi_coding_agent.coding import paths
from pi_coding_agent.coding.packages import sources as src
from pi_coding_agent.coding.packages.install import Installer, PackageError, installed_npm_version
from pi_coding_agent.coding.packages.resolve import configured, offline, source_of
from pi_coding_agent.coding.resources.settings import PROJECT_DIR, SETTINGS_FILE, Settings
from pi_coding_agent.coding.resources.settings_file import write_json_atomic
from pi_coding_agent.coding.resources.trust import is_project_trusted

USAGE = {
    "install": "pi install <source> [-l] [--approve|--no-approve]",
    "remove": "pi remove <source> [-l] [--approve|--no-approve]",
    "update": "pi update [source] [--extensions] [--extension <source>] [--approve|--no-approve]",
    "list": "pi list [--approve|--no-approve]",
}


_TRUST = [("-a, --approve", "Trust the project's own files for this one command"),
          ("-na, --no-approve", "Leave the project's trust-gated files out for this one command")]
_SOURCES = ("\nSources: npm:<name>[@<version>], git:<host>/<path>[@<ref>], an https:// or ssh:// git URL,\n"
            "pypi:<requirement> (this implementation only), or a local path.\n")


def _options(*rows: tuple[str, str]) -> str:
    return "\nOptions:\n" + "".join(f"  {flag:<22}{text}\n" for flag, text in [*rows, *_TRUST])


HELP = {
    "install": "Installs a package and adds it to the settings' packages.\n"
               + _options(("-l, --local", "Write the project's .pi/settings.json instead")) + _SOURCES,
    "remove": "Deletes a package's install and its settings entry (also: pi uninstall).\n"
              + _options(("-l, --local", "Remove it from the project's .pi/settings.json")),
    "update": "Brings configured packages up to date (pi updating itself and its model catalogs is not\n"
              "part of this implementation).\n"
              + _options(("--extensions", "Every configured package"),
                         ("--extension <source>", "One package (the same as naming it)")),
    "list": "Shows the packages of the user's and the project's settings.\n" + _options(),
}


class _Options:
    def __init__(self, command: str) -> None:
        self.command = command
        self.local = False
        self.approve: bool | None = None
        self.source: str | None = None
        self.extension: str | None = None  # ``update --extension <source>``
        self.update_flags: set[str] = set()  # ``--extensions`` and pi's self/models flags


_UPDATE_FLAGS = ("--self", "--extensions", "--models", "--all", "--force")
_UNSUPPORTED = ("--self", "--models", "--all", "--force")
_SELF = ("self", "pi")


def main(argv: list[str]) -> int:
    """Run ``argv[0]`` (one of the package words) with its arguments; the exit code."""
    word, rest = argv[0], argv[1:]
    command = "remove" if word == "uninstall" else word
    if any(a in ("-h", "--help") for a in rest):
        print(f"Usage:\n  {USAGE[command]}\n\n{HELP[command]}")
        return 0
    options = _parse(command, rest)
    if isinstance(options, tuple):
        for line in options:
            print(line, file=sys.stderr)
        return 1
    return _Session(options).run()


def _parse(command: str, args: list[str]) -> _Options | tuple[str, str]:
    """The options, or the two stderr lines of the first problem in pi's order: an unknown option, a
    missing value, an unexpected argument, conflicting options, a missing source. ``list`` ignores one
    positional argument, as pi does."""
    options, problems = _Options(command), _Problems()
    index = 0
    while index < len(args):
        arg, index = args[index], index + 1
        if arg in ("-l", "--local") and command in ("install", "remove"):
            options.local = True
        elif arg in ("-a", "--approve", "-na", "--no-approve"):
            options.approve = arg in ("-a", "--approve")
        elif arg in _UPDATE_FLAGS and command == "update":
            options.update_flags.add(arg)
        elif arg == "--extension" and command == "update":
            value = args[index] if index < len(args) else ""
            if not value or value.startswith("-"):
                problems.note("missing", arg)
            elif options.extension is not None:
                problems.note("conflict", "--extension can only be provided once")
                index += 1
            else:
                options.extension, index = value, index + 1
        elif arg.startswith("-"):
            problems.note("option", arg)
        elif options.source is None:
            options.source = arg
        else:
            problems.note("argument", arg)
    if command == "update" and (conflict := _update_conflict(options)):
        problems.note("conflict", conflict)
    if command in ("install", "remove") and options.source is None:
        problems.note("source", f"Missing {command} source.")
    return problems.first(command) or _supported(options)


class _Problems:
    """The first problem of each kind, as pi keeps them."""

    _ORDER = ("option", "missing", "argument", "conflict", "source")

    def __init__(self) -> None:
        self.found: dict[str, str] = {}

    def note(self, kind: str, text: str) -> None:
        self.found.setdefault(kind, text)

    def first(self, command: str) -> tuple[str, str] | None:
        kind = next((k for k in self._ORDER if k in self.found), None)
        if kind is None:
            return None
        text = self.found[kind]
        if kind == "option":
            return f'Unknown option {text} for "{command}".', f'Use "pi --help" or "{USAGE[command]}".'
        message = {"missing": f"Missing value for {text}.", "argument": f"Unexpected argument {text}."}
        return message.get(kind, text), f"Usage: {USAGE[command]}"


def _update_conflict(options: _Options) -> str | None:
    """pi's rules for ``update``'s targets: one of a source, ``--extension``, or flags."""
    flags, source, extension = options.update_flags, options.source, options.extension
    if "--all" in flags and (flags & {"--self", "--extensions", "--models"} or extension):
        return "--all cannot be combined with --self, --extensions, --models, or --extension"
    if "--all" in flags and source:
        return "--all cannot be combined with a positional source"
    if "--models" in flags:
        if flags & {"--self", "--extensions", "--all"} or extension:
            return "--models cannot be combined with --self, --extensions, --all, or --extension"
        return "--models cannot be combined with a positional source" if source else None
    if extension is not None:
        if flags & {"--self", "--extensions", "--all"}:
            return "--extension cannot be combined with --self, --extensions, or --all"
        return "--extension cannot be combined with a positional source" if source else None
    if source and source not in _SELF and flags & {"--self", "--extensions", "--all"}:
        return "positional update targets cannot be combined with --self, --extensions, or --all"
    return None


def _supported(options: _Options) -> _Options | tuple[str, str]:
    """What pi's update does beyond packages (itself, its model catalogs) is not ours to do."""
    if options.command != "update":
        return options
    usage = f"Usage: {USAGE['update']}"
    asked = sorted(options.update_flags & set(_UNSUPPORTED)) + ([options.source] if options.source in _SELF else [])
    if asked:
        return (f"`pi update {asked[0]}` (updating pi itself or its model catalogs) is not supported by this "
                "implementation; update it with pip", usage)
    options.source = options.extension or options.source
    if options.source is None and "--extensions" not in options.update_flags:
        return ("`pi update` without a package updates pi itself, which this implementation does not do; "
                "use `pi update --extensions` for packages", usage)
    return options


class _Session:
    """One command's agent dir, cwd, trust and settings."""

    def __init__(self, options: _Options) -> None:
        self.options = options
        self.agent_dir, self.cwd = paths.agent_dir(), Path.cwd().resolve()
        startup = Settings.load(self.agent_dir, self.cwd, project_trusted=True)
        self.trusted = is_project_trusted(self.agent_dir, self.cwd, options.approve, startup.default_project_trust)
        self.settings = Settings.load(self.agent_dir, self.cwd, project_trusted=self.trusted)
        self.installer = Installer(self.agent_dir, self.cwd, self.settings.npm_command, inherit=True)

    def run(self) -> int:
        options = self.options
        if options.local and not self.trusted:
            print("Project is not trusted. Use --approve to modify local package config.", file=sys.stderr)
            return 1
        try:
            if options.command == "list":
                return self.list_packages()
            if options.command == "update":
                return self.update(options.source)
            assert options.source is not None
            scope = "project" if options.local else "user"
            return self.install(options.source, scope) if options.command == "install" \
                else self.remove(options.source, scope)
        except (PackageError, ValueError, OSError) as exc:
            print(f"Error: {exc}", file=sys.stderr)
            return 1

    def install(self, source: str, scope: str) -> int:
        print(f"Installing {source}...")
        parsed = src.parse_source(source)
        _check_named(source, parsed)
        if isinstance(parsed, src.LocalSource):
            path = src.resolve_local(parsed.path, self.cwd)
            if not path.exists():
                raise PackageError(f"Path does not exist: {path}")
            source = os.path.relpath(path, src.base_dir(scope, self.agent_dir, self.cwd))
        elif isinstance(parsed, src.NpmSource):
            self.installer.install_npm(parsed, scope)
        elif isinstance(parsed, src.PypiSource):
            self.installer.install_pypi(parsed, scope)
        else:
            self.installer.install_git(parsed, scope)
        self._write(scope, self._with_entry(self._entries(scope), source, scope))
        print(f"Installed {self.options.source}")
        return 0

    def remove(self, source: str, scope: str) -> int:
        entries = self._entries(scope)
        key = self._key(source, self.cwd)
        kept = [e for e in entries if self._key(source_of(e), self._base(scope)) != key]
        print(f"Removing {source}...")  # pi announces it before looking the source up
        if len(kept) == len(entries):
            print(f"No matching package found for {source}", file=sys.stderr)
            return 1
        parsed = src.parse_source(source)
        if isinstance(parsed, src.NpmSource):
            self.installer.uninstall_npm(parsed, scope)
        elif isinstance(parsed, src.GitSource):
            self.installer.remove_git(parsed, scope)
        elif isinstance(parsed, src.PypiSource):
            self.installer.remove_pypi(parsed, scope)
        self._write(scope, kept)
        print(f"Removed {source}")
        return 0

    def update(self, only: str | None) -> int:
        if offline():
            print("Skipped package updates (offline mode)")
            return 0
        entries = configured(self.settings.layer("user"), self.settings.layer("project"))
        chosen = [(e, s) for e, s in entries
                  if only is None or self._key(source_of(e), self._base(s)) == self._key(only, self.cwd)]
        if only is not None and not chosen:
            print(f"Error: No matching package found for {only}", file=sys.stderr)
            return 1
        updated = [change for entry, scope in chosen if (change := self._update_one(source_of(entry), scope))]
        if not updated:
            print(f"{only} is already up to date" if only else "Packages are already up to date")
            return 0
        print(f"Updated {len(updated)} package{'' if len(updated) == 1 else 's'}:")
        for change in updated:
            print(f"  {change}")
        return 0

    def _update_one(self, source: str, scope: str) -> str | None:
        """Update one configured package; ``"<source>[ (project)] <from> -> <to>"`` when it changed
        (a pinned npm version, or one with nothing newer inside its range, is left alone)."""
        parsed = src.parse_source(source)
        if isinstance(parsed, src.NpmSource):
            path = src.npm_path(parsed, scope, self.agent_dir, self.cwd)
            if parsed.pinned or not self.installer.npm_needs_update(parsed, path):
                return None
            before = installed_npm_version(path)
            print(f"Updating {source}...")
            self.installer.install_npm(parsed, scope, parsed.spec if parsed.version else f"{parsed.name}@latest")
            after = installed_npm_version(path)
        elif isinstance(parsed, src.GitSource):
            path = src.git_path(parsed, scope, self.agent_dir, self.cwd)
            before = self.installer.git_head(path)
            print(f"Updating {source}...")
            self.installer.update_git(parsed, scope)
            after = self.installer.git_head(path)
            before, after = before and before[:7], after and after[:7]
        elif isinstance(parsed, src.PypiSource) and not parsed.pinned:
            from pi_coding_agent.coding.packages.pypi import installed_version

            path = src.pypi_path(parsed, scope, self.agent_dir, self.cwd)
            before = installed_version(parsed, path)
            print(f"Updating {source}...")
            self.installer.install_pypi(parsed, scope)
            after = installed_version(parsed, path)
        else:
            return None
        if before == after:
            return None
        return f"{source}{' (project)' if scope == 'project' else ''} {before or '(none)'} -> {after or '(none)'}"

    def list_packages(self) -> int:
        groups = [(scope, [source_of(e) for e, s in configured(self.settings.layer("user"),
                                                               self.settings.layer("project")) if s == scope])
                  for scope in ("user", "project")]
        if not any(items for _, items in groups):
            print("No packages installed.")
            return 0
        printed = False
        for scope, items in groups:
            if not items:
                continue
            if printed:
                print()
            print("User packages:" if scope == "user" else "Project packages:")
            for source in items:
                print(f"  {source}")
                path = src.installed_path(src.parse_source(source), scope, self.agent_dir, self.cwd)
                if path.exists():
                    print(f"    {path}")
            printed = True
        return 0

    # ------------------------------------------------------------------ settings

    def _base(self, scope: str) -> Path:
        return src.base_dir(scope, self.agent_dir, self.cwd)

    def _key(self, source: str, base: Path) -> str:
        return src.identity(source, base)

    def _entries(self, scope: str) -> list[object]:
        entries = self.settings.layer(scope).get("packages")
        return list(entries) if isinstance(entries, list) else []

    def _with_entry(self, entries: list[object], source: str, scope: str) -> list[object]:
        """``source`` added, or written over the entry of the same package (an object keeps its filters)."""
        key = self._key(source, self._base(scope))
        for index, entry in enumerate(entries):
            if isinstance(entry, (str, dict)) and self._key(source_of(entry), self._base(scope)) == key:
                entries[index] = source if isinstance(entry, str) else {**entry, "source": source}
                return entries
        return [*entries, source]

    def _write(self, scope: str, entries: list[object]) -> None:
        path = (self.cwd / PROJECT_DIR if scope == "project" else self.agent_dir) / SETTINGS_FILE
        from pi_coding_agent.coding.resources.settings_file import read_for_update

        data = read_for_update(path)
        if data is None:
            raise PackageError(f"{path} is not a JSON object; not changed")
        data["packages"] = entries
        write_json_atomic(path, data)


def _check_named(source: str, parsed: src.Source) -> None:
    """A registry source must name its package. pi installs ``npm:`` alone (npm then installs the
    folder's own dependencies) and records it in settings; ours says what is missing instead, and a
    ``pypi:`` that is no requirement is not taken for a path named ``pypi:...``."""
    if isinstance(parsed, src.NpmSource) and not parsed.name:
        raise PackageError("npm: needs a package name: npm:<name>[@<version>]")
    if source.startswith("pypi:") and not isinstance(parsed, src.PypiSource):
        raise PackageError(f"not a pip requirement: {source[5:]!r} (pypi:<name>[==<version>])")
