"""Package sources as pi 1.6.0 writes them in settings and on its command line, and where each one lives.

Three kinds of pi's: ``npm:<name>[@<version>]``, git (``git:<host>/<path>[@<ref>]``, ``git:git@host:path``, or a
``https://``/``http://``/``ssh://``/``git://`` URL, each with an optional ``@<ref>`` after the path), and
local paths (anything else; a ``file://`` URL is a local path too, as in pi); and ours,
``pypi:<requirement>`` (``coding/packages/pypi.py``). Install locations are pi's, so one agent
directory serves both implementations:

- npm: ``<agentDir>/npm/node_modules/<name>`` (project: ``<cwd>/.pi/npm/...``),
- git: ``<agentDir>/git/<host>/<path>`` (project: ``<cwd>/.pi/git/...``),
- PyPI: ``<agentDir>/pypi/<name>`` (project: ``<cwd>/.pi/pypi/...``),
- ``-e`` (temporary) sources: ``<agentDir>/tmp/extensions/<prefix>/<hash8>/<suffix>``, the hash being
  the first 8 hex digits of sha256(``<prefix>-<suffix>[@<ref>]``).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from pi_coding_agent.coding.packages.pypi import PypiSource, parse_pypi

PROJECT_DIR = ".pi"
_SEMVER = re.compile(r"^v?\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$")
_NPM_SPEC = re.compile(r"^(@?[^@]+(?:/[^@]+)?)(?:@(.+))?$")
_URL_PREFIXES = ("https://", "http://", "ssh://", "git://")


@dataclass(frozen=True)
class NpmSource:
    spec: str  # what follows ``npm:``, handed to ``npm install``
    name: str
    version: str | None

    @property
    def pinned(self) -> bool:
        """An exact version is never re-checked (pi's rule for ``-e`` refreshes and updates)."""
        return self.version is not None and _SEMVER.match(self.version) is not None


@dataclass(frozen=True)
class GitSource:
    repo: str  # what ``git clone`` is given
    host: str
    path: str  # owner/name, without ``.git``
    ref: str | None


@dataclass(frozen=True)
class LocalSource:
    path: str  # as written; resolved against the settings file's directory or the cwd


Source = NpmSource | GitSource | LocalSource | PypiSource
Scope = str  # "user" | "project" | "temporary"


def parse_source(source: str) -> Source:
    """What kind of package ``source`` names (pi's rules; see the module docstring)."""
    if source.startswith("npm:"):
        spec = source[4:].strip()
        match = _NPM_SPEC.match(spec)
        name, version = (match.group(1), match.group(2)) if match else (spec, None)
        return NpmSource(spec, name, version)
    if source.startswith("pypi:") and (pypi := parse_pypi(source[5:])) is not None:
        return pypi
    if not _is_local_path(source):
        git = parse_git(source)
        if git is not None:
            return git
    return LocalSource(source)


def _is_local_path(source: str) -> bool:
    """pi's rule: everything is a path except these prefixes."""
    return not source.strip().startswith(("npm:", "git:", "github:", "http:", "https:", "ssh:", "builtin:"))


def parse_git(source: str) -> GitSource | None:
    """A git source, or None. Without the ``git:`` prefix only explicit protocol URLs count."""
    text = source.strip()
    prefixed = text.startswith("git:")
    url = text[4:].strip() if prefixed else text
    if not prefixed and not url.lower().startswith(_URL_PREFIXES):
        return None
    repo, ref = _split_ref(url)
    scp = re.match(r"^git@([^:]+):(.+)$", repo)
    if scp:
        host, path = scp.group(1), scp.group(2)
    elif repo.lower().startswith(_URL_PREFIXES):
        parts = urlsplit(repo)
        host, path = parts.hostname or "", parts.path.lstrip("/")
    else:
        host, _, path = repo.partition("/")
        if "." not in host and host != "localhost":
            return None
        repo = f"https://{repo}"
    return _build_git(repo, host, path, ref)


def _split_ref(url: str) -> tuple[str, str | None]:
    """``(repository, ref)``: an ``@`` inside the path (after the host) starts the ref."""
    scp = re.match(r"^git@([^:]+):(.+)$", url)
    if scp:
        head, rest = f"git@{scp.group(1)}:", scp.group(2)
    elif "://" in url:
        scheme, _, after = url.partition("://")
        host, slash, rest = after.partition("/")
        head = f"{scheme}://{host}{slash}"
    else:
        host, slash, rest = url.partition("/")
        head = f"{host}{slash}"
    path, at, ref = rest.partition("@")
    if not at or not path or not ref:
        return url, None
    return (head + path).rstrip("/"), ref


def _build_git(repo: str, host: str, path: str, ref: str | None) -> GitSource | None:
    """Refuse what would escape the install root (pi's checks: no ``..``, no absolute parts, owner/name)."""
    if path.startswith("/"):
        return None
    path = re.sub(r"\.git$", "", path).lstrip("/")
    if not host or not path or len(path.split("/")) < 2:
        return None
    for value, slash_ok in ((host, False), (path, True)):
        for candidate in (value, unquote(value)):
            if "\0" in candidate or "\\" in candidate or candidate.startswith("/"):
                return None
            if (not slash_ok and "/" in candidate) or ".." in candidate.split("/"):
                return None
    return GitSource(repo, host, path, ref)


def identity(source: str, base_dir: Path) -> str:
    """pi's package identity: npm by name, git by host/path (any ref or protocol), local by real path."""
    parsed = parse_source(source)
    if isinstance(parsed, NpmSource):
        return f"npm:{parsed.name}"
    if isinstance(parsed, GitSource):
        return f"git:{parsed.host}/{parsed.path}"
    if isinstance(parsed, PypiSource):
        return f"pypi:{parsed.name}"
    return f"local:{resolve_local(parsed.path, base_dir)}"


def resolve_local(path: str, base_dir: Path) -> Path:
    """A local source made absolute against ``base_dir`` (``~`` is the home directory)."""
    text = path.strip()
    if text.startswith("file://"):
        text = unquote(urlsplit(text).path)
    return Path(os.path.normpath(base_dir / os.path.expanduser(text)))


def base_dir(scope: Scope, agent_dir: Path, cwd: Path) -> Path:
    """Where a scope's relative local sources start: the directory of its settings file."""
    if scope == "user":
        return agent_dir
    if scope == "project":
        return cwd / PROJECT_DIR
    return cwd


def npm_root(scope: Scope, agent_dir: Path, cwd: Path) -> Path:
    """The ``--prefix`` npm installs a scope's packages into."""
    if scope == "temporary":
        return temporary_dir(agent_dir, "npm")
    return (cwd / PROJECT_DIR if scope == "project" else agent_dir) / "npm"


def npm_path(source: NpmSource, scope: Scope, agent_dir: Path, cwd: Path) -> Path:
    return npm_root(scope, agent_dir, cwd) / "node_modules" / source.name


def git_path(source: GitSource, scope: Scope, agent_dir: Path, cwd: Path) -> Path:
    if scope == "temporary":
        return temporary_dir(agent_dir, f"git-{source.host}", source.path, source.ref)
    root = (cwd / PROJECT_DIR if scope == "project" else agent_dir) / "git"
    return _inside(root, source.host, *source.path.split("/"))


def temporary_dir(agent_dir: Path, prefix: str, suffix: str = "", ref: str | None = None) -> Path:
    """pi's cache folder of a ``-e`` source (see the module docstring)."""
    import hashlib  # only ``-e`` packages need it

    root = agent_dir / "tmp" / "extensions"
    digest = hashlib.sha256(f"{prefix}-{suffix}{f'@{ref}' if ref else ''}".encode()).hexdigest()[:8]
    return _inside(root, prefix, digest, *([suffix] if suffix else []))


def pypi_path(source: PypiSource, scope: Scope, agent_dir: Path, cwd: Path) -> Path:
    if scope == "temporary":
        return temporary_dir(agent_dir, "pypi", source.name)
    return _inside((cwd / PROJECT_DIR if scope == "project" else agent_dir) / "pypi", source.name)


def installed_path(source: Source, scope: Scope, agent_dir: Path, cwd: Path) -> Path:
    """Where the package's files are (for a local source: the path itself)."""
    if isinstance(source, NpmSource):
        return npm_path(source, scope, agent_dir, cwd)
    if isinstance(source, GitSource):
        return git_path(source, scope, agent_dir, cwd)
    if isinstance(source, PypiSource):
        return pypi_path(source, scope, agent_dir, cwd)
    return resolve_local(source.path, base_dir(scope, agent_dir, cwd))


def _inside(root: Path, *parts: str) -> Path:
    resolved_root = Path(os.path.normpath(root.absolute()))
    path = Path(os.path.normpath(resolved_root.joinpath(*parts)))
    if path != resolved_root and resolved_root not in path.parents:
        raise ValueError(f"Refusing to use path outside package install root: {path}")
    return path
