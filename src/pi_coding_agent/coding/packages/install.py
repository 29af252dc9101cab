"""Installing, updating and removing npm and git packages with the real ``npm`` and ``git``, laid out
as pi 1.6.0 lays them out (``sources`` has the paths), so either implementation finds the other's.

npm packages install with ``npm install <spec> --prefix <root> --legacy-peer-deps --no-audit --no-fund``
into a root holding ``{"name": "pi-extensions", "private": true}``; a git clone gets
``npm install --omit=dev --legacy-peer-deps --no-audit --no-fund`` when it has a ``package.json``.
Install roots carry a ``.gitignore`` of ``*`` / ``!.gitignore``. The ``npmCommand`` setting replaces
``npm`` (an argv list), as in pi.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from pi_coding_agent.coding.packages.sources import (
    GitSource,
    NpmSource,
    PypiSource,
    Scope,
    git_path,
    npm_root,
    pypi_path,
)

_NPM_FLAGS = ("--legacy-peer-deps", "--no-audit", "--no-fund")
_GIT_DEPENDENCY_ARGS = ("install", "--omit=dev", *_NPM_FLAGS)
_COMMIT = re.compile(r"^[0-9a-f]{7,64}$", re.IGNORECASE)
NETWORK_TIMEOUT_S = 120.0


class PackageError(Exception):
    """An npm or git step failed, or the tool is missing; the message says which and why."""


class Installer:
    """npm and git steps for one agent dir and cwd; child output goes to stderr (so an RPC stdout
    never sees it), or with ``inherit`` (the package commands) to our stdout and stderr as the child
    wrote it, as pi's commands pass it on."""

    def __init__(self, agent_dir: Path, cwd: Path, npm_command: Sequence[str] | None = None,
                 inherit: bool = False) -> None:
        self.agent_dir, self.cwd = agent_dir, cwd
        self.npm = list(npm_command) if npm_command else ["npm"]
        self.output: IO[str] | None = None if inherit else sys.stderr

    # ------------------------------------------------------------------ npm

    def install_npm(self, source: NpmSource, scope: Scope, spec: str | None = None) -> None:
        self._private_cache(scope)
        root = npm_root(scope, self.agent_dir, self.cwd)
        _ensure_npm_project(root)
        self._npm(["install", spec or source.spec, "--prefix", str(root.resolve()), *_NPM_FLAGS])

    def uninstall_npm(self, source: NpmSource, scope: Scope) -> None:
        root = npm_root(scope, self.agent_dir, self.cwd)
        if root.exists():
            self._npm(["uninstall", source.name, "--prefix", str(root.resolve()), *_NPM_FLAGS])

    def latest_npm_version(self, source: NpmSource) -> str | None:
        """The newest registry version inside the source's range (``npm view <spec> versions``, as pi
        asks it), None when it cannot be asked."""
        from pi_coding_agent.coding.packages.versions import newest

        try:
            out = self._capture([*self.npm, "view", source.spec if source.version else source.name, "version",
                                 "--json"], self.cwd)
            value = json.loads(out) if out.strip() else None
        except (PackageError, ValueError):
            return None
        if isinstance(value, list):
            return newest([v for v in value if isinstance(v, str) and v], source.version)
        return value if isinstance(value, str) else None

    def npm_needs_update(self, source: NpmSource, installed: Path) -> bool:
        """pi's update check: a newer version inside the range, or no installed version to compare, or
        a registry that cannot be asked (then the update runs, as in pi)."""
        from pi_coding_agent.coding.packages.versions import is_newer

        version = installed_npm_version(installed)
        if version is None:
            return True
        latest = self.latest_npm_version(source)
        return latest is None or is_newer(latest, version)

    # ------------------------------------------------------------------ PyPI

    def install_pypi(self, source: PypiSource, scope: Scope) -> None:
        """``pip install --target`` into a fresh folder (so the newest version the specifier allows),
        swapped in when pip succeeded: a failed update, or one interrupted mid-swap, keeps a copy."""
        self._private_cache(scope)
        target = pypi_path(source, scope, self.agent_dir, self.cwd)
        staging = target.with_name(target.name + ".installing")
        shutil.rmtree(staging, ignore_errors=True)
        try:
            self._run([sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "--no-input",
                       "--target", str(staging), source.requirement], None)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        _swap_in(staging, target)
        if scope != "temporary":
            _ensure_gitignore(target.parent)

    def latest_pypi_version(self, source: PypiSource) -> str | None:
        """The version pip would install for the requirement now (a dry run, dependencies not asked),
        None when the index cannot be asked: the ``-e`` refresh check, as ``npm view`` is for npm."""
        try:
            out = self._capture([sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--no-deps",
                                 "--ignore-installed", "--report", "-", "--disable-pip-version-check",
                                 "--no-input", source.requirement], self.cwd)
            report = json.loads(out)
        except (PackageError, ValueError):
            return None
        installs = report.get("install") if isinstance(report, dict) else None
        versions = [i.get("metadata", {}).get("version") for i in installs or [] if isinstance(i, dict)]
        return next((v for v in versions if isinstance(v, str)), None)

    def remove_pypi(self, source: PypiSource, scope: Scope) -> None:
        shutil.rmtree(pypi_path(source, scope, self.agent_dir, self.cwd), ignore_errors=True)

    # ------------------------------------------------------------------ git

    def install_git(self, source: GitSource, scope: Scope) -> None:
        target = git_path(source, scope, self.agent_dir, self.cwd)
        if target.exists():
            self.update_git(source, scope)
            return
        self._private_cache(scope)
        if scope != "temporary":
            _ensure_gitignore(target.parents[len(source.path.split("/"))])
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._run(["git", "clone", source.repo, str(target)], None)
            if source.ref:
                self._run(["git", "checkout", source.ref], target)
            self._git_dependencies(target)
        except BaseException:
            shutil.rmtree(target, ignore_errors=True)
            raise

    def update_git(self, source: GitSource, scope: Scope) -> None:
        """Fetch and hard-reset to the configured ref, or to the upstream branch without one."""
        target = git_path(source, scope, self.agent_dir, self.cwd)
        if not target.exists():
            self.install_git(source, scope)
            return
        if source.ref:
            self._run(["git", "fetch", "origin", source.ref], target)
            wanted = "FETCH_HEAD"
        else:
            self._run(["git", "fetch", "--prune", "origin"], target)
            wanted = "@{upstream}" if self._has_upstream(target) else "origin/HEAD"
        head = self._capture(["git", "rev-parse", "HEAD"], target).strip()
        new = self._capture(["git", "rev-parse", f"{wanted}^{{commit}}"], target).strip()
        if head != new:
            self._run(["git", "reset", "--hard", new], target)
            self._run(["git", "clean", "-fdx"], target)
            self._git_dependencies(target)

    def git_checked_out(self, source: GitSource, target: Path) -> bool:
        """A commit-hash ref that is already HEAD needs no fetch (pi's ``-e`` refresh shortcut)."""
        if not source.ref or not _COMMIT.match(source.ref):
            return False
        try:
            return self._capture(["git", "rev-parse", "HEAD"], target).strip().lower().startswith(source.ref.lower())
        except PackageError:
            return False

    def git_head(self, target: Path) -> str | None:
        """The checked-out commit of a clone, None without one."""
        if not target.exists():
            return None
        try:
            return self._capture(["git", "rev-parse", "HEAD"], target).strip() or None
        except PackageError:
            return None

    def remove_git(self, source: GitSource, scope: Scope) -> None:
        target = git_path(source, scope, self.agent_dir, self.cwd)
        shutil.rmtree(target, ignore_errors=True)
        root = target.parents[len(source.path.split("/"))]
        for parent in target.parents:  # drop the now empty host/owner folders
            if parent == root or root not in parent.parents:
                break
            try:
                parent.rmdir()
            except OSError:
                break

    def _private_cache(self, scope: Scope) -> None:
        """``-e`` packages live in ``<agentDir>/tmp/extensions``, readable by its owner only (as in pi)."""
        if scope == "temporary":
            cache = self.agent_dir / "tmp" / "extensions"
            cache.mkdir(parents=True, exist_ok=True)
            cache.chmod(0o700)

    def _has_upstream(self, target: Path) -> bool:
        try:
            self._capture(["git", "rev-parse", "--abbrev-ref", "@{upstream}"], target)
            return True
        except PackageError:
            return False

    def _git_dependencies(self, target: Path) -> None:
        if (target / "package.json").is_file():
            self._run([*self.npm, *_GIT_DEPENDENCY_ARGS], target)

    # ------------------------------------------------------------------ processes

    def _npm(self, args: list[str]) -> None:
        self._run([*self.npm, *args], None)

    def _run(self, argv: list[str], cwd: Path | None) -> None:
        self._call(argv, cwd, capture=False)

    def _capture(self, argv: list[str], cwd: Path) -> str:
        return self._call(argv, cwd, capture=True)

    def _call(self, argv: list[str], cwd: Path | None, capture: bool) -> str:
        env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}  # never wait for a password nobody can type
        sys.stdout.flush()  # our lines before the child's
        sys.stderr.flush()
        try:
            done = subprocess.run(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, text=True,
                                  stdout=subprocess.PIPE if capture else self.output,
                                  stderr=subprocess.PIPE if capture else self.output,
                                  timeout=NETWORK_TIMEOUT_S, check=False)
        except FileNotFoundError:
            raise PackageError(f"{argv[0]} is not installed or not on PATH (needed to run: "
                               f"{' '.join(argv[:2])})") from None
        except subprocess.TimeoutExpired:
            raise PackageError(f"{' '.join(argv[:2])} did not finish in {NETWORK_TIMEOUT_S:.0f} s") from None
        if done.returncode != 0:
            detail = (done.stderr or "").strip().splitlines()[-1:] if capture else []
            raise PackageError(f"{' '.join(argv)} failed with code {done.returncode}"
                               + (f": {detail[0]}" if detail else ""))
        return done.stdout or ""


def _ensure_npm_project(root: Path) -> None:
    _ensure_gitignore(root)
    manifest = root / "package.json"
    if not manifest.exists():
        manifest.write_text(json.dumps({"name": "pi-extensions", "private": True}, indent=2), encoding="utf-8")


def _ensure_gitignore(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    ignore = directory / ".gitignore"
    if not ignore.exists():
        ignore.write_text("*\n!.gitignore\n", encoding="utf-8")


def installed_npm_version(path: Path) -> str | None:
    """The ``version`` of an installed package's ``package.json``."""
    try:
        value = json.loads((path / "package.json").read_text(encoding="utf-8-sig")).get("version")
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, str) else None


def _swap_in(staging: Path, target: Path) -> None:
    """Put ``staging`` where ``target`` is by renames only: at every moment one complete copy is in
    place (the old one is set aside, not deleted, until the new one is there)."""
    old = target.with_name(target.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if target.exists():
        target.rename(old)
    staging.rename(target)
    shutil.rmtree(old, ignore_errors=True)
