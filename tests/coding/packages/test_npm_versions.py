"""npm version ranges in package sources (``npm:pkg@^1.2``, ``@~1.2.3``, ``@>=1.3 <2``), checked as pi
1.6.0 checks them: a copy outside the range is reinstalled when the session starts, ``pi update``
moves to the newest version inside the range (never past it), leaves a pinned version alone, and does
nothing when the installed copy is already the newest. The registry is local (``npm pack`` tarballs of
four versions of one package, shared by the module); the same steps run on the reference pi must give
the same results. Our run of the steps serves both the check of ours and the comparison.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pi_coding_agent.coding.packages.versions import installed_matches, newest
from tests.coding.packages.test_packages import _env, _non_builtin, needs_npm
from tests.support.cli_sides import needs_reference
from tests.support.package_fixtures import get_commands, make_package, npm_env, npm_registry, run_pi
from tests.support.run_once import RunOnce, shared_run

VERSIONS = ("1.0.0", "1.2.0", "1.3.0", "2.0.0")
NAME = "rng-fixture-pkg"
NPM_SAYS = ("changed ", "added ", "removed ", "up to date, ")  # npm's own summary lines


@pytest.mark.parametrize(("installed", "version", "expected"), [
    ("1.2.5", "^1.2", True), ("2.0.0", "^1.2", False), ("1.2.9", "~1.2.3", True), ("1.3.0", "~1.2.3", False),
    ("1.9.9", ">=1 <2", True), ("2.0.0", ">=1 <2", False), ("1.2.3", "1.2.3", True), ("1.2.4", "v1.2.3", False),
    ("3.0.0", "latest", True), ("3.0.0", None, True), (None, "^1", False), ("not-a-version", "^1", False)])
def test_installed_copy_against_the_specification(installed, version, expected):
    assert installed_matches(installed, version) is expected


def test_newest_version_inside_the_range():
    assert newest(list(VERSIONS), "^1.2") == "1.3.0"
    assert newest(list(VERSIONS), ">=1 <1.3") == "1.2.0"
    assert newest(list(VERSIONS), "latest") == "2.0.0" == newest(list(VERSIONS), None)
    assert newest(list(VERSIONS), "^3") is None


def _installed(home: Path) -> str | None:
    manifest = home / ".pi" / "agent" / "npm" / "node_modules" / NAME / "package.json"
    return json.loads(manifest.read_text())["version"] if manifest.exists() else None


def _configure(home: Path, spec: str) -> None:
    (home / ".pi" / "agent" / "settings.json").write_text(json.dumps({"packages": [f"npm:{NAME}@{spec}"]}))


def _steps(kind: str, home: Path, registry: str, work: Path) -> list[object]:
    """What one implementation does through the steps: versions installed, commands, update output."""
    env = npm_env(_env(home), registry, work / f"{kind}-npm-cache")
    seen: list[object] = []
    done = run_pi(kind, ["install", f"npm:{NAME}@~1.2.0"], env, work)
    seen += [done.returncode, _installed(home)]
    for spec in (">=1.3 <2", "1.2.0"):  # outside the range (then off the pin): reinstalled on start
        _configure(home, spec)
        commands, _ = get_commands(kind, [], env, work)
        seen += [spec, _installed(home), [c["name"] for c in _non_builtin(commands)]]
    for spec in ("1.2.0", "^1.2", "^1.2"):  # pinned: left alone; range: newest inside it, then nothing
        _configure(home, spec)
        done = run_pi(kind, ["update", "--extensions"], env, work)
        said = [line for line in done.stdout.splitlines() if line and not line.startswith(NPM_SAYS)]
        seen += [spec, done.returncode, said, _installed(home)]
    return seen


_STEPS: RunOnce[list[object]] = RunOnce()


async def _steps_once(kind: str, root: Path, registry: str) -> list[object]:
    """``_steps`` of side ``kind``, played once per process: our run serves both tests."""
    async def play() -> list[object]:
        (root / "work").mkdir(parents=True)
        return _steps(kind, root / kind, registry, root / "work")
    return await _STEPS.get((kind, registry), play)


@pytest.fixture(scope="module")
def registry(tmp_path_factory):
    """The four versions' registry, shared by the module's tests (they only read it)."""
    root = tmp_path_factory.mktemp("registry")
    packages = [make_package(root / f"src-{v}", NAME, prompt=f"p{v.replace('.', '')}", version=v) for v in VERSIONS]
    with npm_registry(packages, root) as url:
        yield url


@needs_npm
@pytest.mark.slow
@shared_run("npm-ranges")
async def test_ranges_reinstall_and_update_within_bounds(tmp_path, registry):
    assert await _steps_once("ours", tmp_path, registry) == [
        0, "1.2.0",
        ">=1.3 <2", "1.3.0", ["p130", "skill:hello"],
        "1.2.0", "1.2.0", ["p120", "skill:hello"],
        "1.2.0", 0, ["Packages are already up to date"], "1.2.0",
        "^1.2", 0, [f"Updating npm:{NAME}@^1.2...", "Updated 1 package:", f"  npm:{NAME}@^1.2 1.2.0 -> 1.3.0"], "1.3.0",
        "^1.2", 0, ["Packages are already up to date"], "1.3.0"]


@needs_npm
@needs_reference
@shared_run("npm-ranges")
async def test_ranges_as_the_reference(tmp_path, registry):
    assert await _steps_once("ours", tmp_path / "o", registry) == await _steps_once("reference", tmp_path / "r", registry)
