"""The suite's own machinery: scripts/install_test_deps.sh offline, and the closing lines about skips."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.reference_pi import REFERENCE_PI

ROOT = Path(__file__).resolve().parents[2]
CACHE_VARIABLES = ("PI_REFERENCE_DIR", "PI_MCP_TEST_SERVERS", "PI_ACPX_DIR", "PI_ACP_DIR", "PI_TS_RUNTIME_DIR")


def _bin_without_npm(tmp_path: Path) -> Path:
    """A PATH folder with what the script uses, chromium and bwrap as stand-ins, and no npm."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for name in ("bash", "cp", "mkdir", "id", "timeout", "dirname"):
        found = shutil.which(name)
        assert found is not None
        (folder / name).symlink_to(found)
    for name in ("chromium", "bwrap", "tmux"):
        (folder / name).symlink_to("/bin/true")
    return folder


def _install(tmp_path: Path, caches: dict[str, str]) -> subprocess.CompletedProcess[str]:
    env = {"PATH": str(_bin_without_npm(tmp_path)), "HOME": str(tmp_path / "home"), **caches}
    return subprocess.run(["bash", str(ROOT / "scripts" / "install_test_deps.sh")], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, check=False)


def test_offline_install_warns_once_per_missing_piece_and_succeeds(tmp_path: Path) -> None:
    done = _install(tmp_path, {name: str(tmp_path / name) for name in CACHE_VARIABLES})
    assert done.returncode == 0
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 7, lines
    assert sum(line.startswith("warning: npm not found: ") for line in lines) == 6, lines
    assert "warning: python3 not found: mcp-server-time not installed, its tests skip" in lines
    assert "the reference pi 1.6.0 not installed, its tests skip" in done.stderr


def test_install_with_everything_cached_is_silent(tmp_path: Path) -> None:
    markers = {"PI_REFERENCE_DIR": ["node22/node_modules/.bin/node", "pi-1.6.0/node_modules/.bin/pi"],
               "PI_MCP_TEST_SERVERS": ["node_modules/@modelcontextprotocol/server-filesystem/package.json",
                                       "venv/bin/mcp-server-time"],
               "PI_ACPX_DIR": ["node_modules/.bin/acpx"], "PI_ACP_DIR": ["node_modules/pi-acp/dist/index.js"],
               "PI_TS_RUNTIME_DIR": ["node_modules/.package-lock.json"]}
    for variable, files in markers.items():
        for file in files:
            (tmp_path / variable / file).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / variable / file).touch()
    done = _install(tmp_path, {name: str(tmp_path / name) for name in CACHE_VARIABLES})
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def _run_short_hash(reference_dir: str) -> str:
    """The closing lines of a pytest run of one small module with a side-by-side case."""
    env = {**os.environ, "PI_REFERENCE_DIR": reference_dir}
    done = subprocess.run([sys.executable, "-m", "pytest", "-n", "0", "-p", "no:cacheprovider",
                           "tests/reference/test_short_hash.py"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.mark.slow
def test_a_missing_reference_is_named_in_the_closing_lines(tmp_path: Path) -> None:
    output = _run_short_hash(str(tmp_path / "absent"))
    assert (f"side-by-side with pi 1.6.0: 0 of 1 ran; 1 skipped: reference pi 1.6.0 not installed at "
            f"{tmp_path / 'absent'} (bash scripts/install_test_deps.sh)") in output


@pytest.mark.reference
@pytest.mark.slow
def test_a_present_reference_is_counted_as_ran() -> None:
    output = _run_short_hash(str(REFERENCE_PI.parents[3]))
    assert "side-by-side with pi 1.6.0: 1 of 1 ran\n" in output


def test_the_locked_typescript_runtime_is_the_one_pi_installs() -> None:
    """The suite installs the runtime the sidecar would install on first use: same packages, same versions."""
    from pi_coding_agent.coding.extensions.typescript.host import RUNTIME_PACKAGES

    locked = json.loads((ROOT / "scripts" / "test-deps" / "ts-runtime" / "package.json").read_text())["dependencies"]
    assert sorted(f"{name}@{version}" for name, version in locked.items()) == sorted(RUNTIME_PACKAGES)
