"""The sidecar runtime's first install, when several processes start at once on a fresh machine."""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path

import pytest

from pi_coding_agent.coding.extensions.typescript import host

# a stand-in npm: records each run, takes its time as a real install does, then writes the packages
FAKE_NPM = """#!/bin/sh
echo run >> "{log}"
sleep 0.3
prefix=$(echo "$@" | sed 's/.*--prefix \\([^ ]*\\).*/\\1/')
for name in jiti typebox; do
  mkdir -p "$prefix/node_modules/$name" && echo '{{}}' > "$prefix/node_modules/$name/package.json"
done
echo '{{}}' > "$prefix/node_modules/.package-lock.json"  # npm's hidden lockfile, written last
"""


def _fake_npm(bin_dir: Path, log: Path) -> None:
    bin_dir.mkdir()
    npm = bin_dir / "npm"
    npm.write_text(FAKE_NPM.format(log=log))
    npm.chmod(npm.stat().st_mode | stat.S_IXUSR)


async def test_processes_starting_together_install_the_runtime_once(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "npm-runs"
    _fake_npm(tmp_path / "bin", log)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    directory = tmp_path / "runtime"
    done = await asyncio.gather(*(host._ensure_runtime(directory) for _ in range(3)))
    assert done == [directory] * 3
    assert log.read_text().splitlines() == ["run"]  # the waiters found it installed
    assert not (directory / "package.json.lock").exists()  # the lock is released


async def test_a_failed_install_is_named_and_releases_the_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "npm").write_text("#!/bin/sh\nexit 1\n")
    (bin_dir / "npm").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    directory = tmp_path / "runtime"
    with pytest.raises(host.LoadError, match="npm failed"):
        await host._ensure_runtime(directory)
    assert not (directory / "package.json.lock").exists()


async def test_an_install_killed_halfway_is_installed_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A killed npm leaves the packages' package.json without the rest (the sidecar then fails to load
    them) and no hidden lockfile; the next start installs again, after taking over the dead lock."""
    log = tmp_path / "npm-runs"
    _fake_npm(tmp_path / "bin", log)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    directory = tmp_path / "runtime"
    for name in ("jiti", "typebox"):
        (directory / "node_modules" / name).mkdir(parents=True)
        (directory / "node_modules" / name / "package.json").write_text("{}")
    dead = directory / "package.json.lock"
    dead.mkdir()
    os.utime(dead, (0, 0))  # its holder stopped touching it long ago
    assert await host._ensure_runtime(directory) == directory
    assert log.read_text().splitlines() == ["run"]
    assert (directory / "node_modules" / ".package-lock.json").is_file() and not dead.exists()
