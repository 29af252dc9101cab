"""``pypi:`` packages: Python distributions installed with pip into a folder of their own, their
``pi_coding_agent.extensions`` entry points loaded as extensions. The wheels are written here (a
wheel is a zip with a ``.dist-info``) and served from a local folder (``PIP_NO_INDEX`` and
``PIP_FIND_LINKS``): no network.
"""

from __future__ import annotations

import base64
import hashlib
import json
import sys
import zipfile
from pathlib import Path

import pytest

from pi_coding_agent.coding.packages import sources as src
from tests.coding.packages.test_packages import _env, _non_builtin, _settings
from tests.support.package_fixtures import get_commands, rpc_records, run_pi

EXTENSION = '''from pi_review.words import WORD


def setup(pi):
    pi.register_command("review", description=WORD, handler=lambda args, ctx: None)
'''


def build_wheel(folder: Path, name: str, version: str, files: dict[str, str], entry_points: dict[str, str]) -> Path:
    """A pure-Python wheel of ``files`` declaring ``entry_points`` in ``pi_coding_agent.extensions``."""
    module = name.replace("-", "_")
    info = f"{module}-{version}.dist-info"
    contents = dict(files)
    contents[f"{info}/METADATA"] = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    contents[f"{info}/WHEEL"] = "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    if entry_points:
        contents[f"{info}/entry_points.txt"] = "[pi_coding_agent.extensions]\n" + "".join(
            f"{key} = {value}\n" for key, value in entry_points.items())
    record = []
    for path, text in contents.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    contents[f"{info}/RECORD"] = "\n".join([*record, f"{info}/RECORD,,"]) + "\n"
    wheel = folder / f"{module}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in contents.items():
            archive.writestr(path, text)
    return wheel


def review_wheel(folder: Path, version: str) -> Path:
    return build_wheel(folder, "pi-review", version, {
        "pi_review/__init__.py": EXTENSION, "pi_review/words.py": f"WORD = 'review {version}'\n"},
        {"review": "pi_review"})


def _pip_env(home: Path, index: Path) -> dict[str, str]:
    return {**_env(home), "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(index), "PIP_CONFIG_FILE": "/dev/null"}


def _review(env: dict[str, str], work: Path) -> list[tuple[str, str, str]]:
    commands, _ = get_commands("ours", [], env, work)
    return [(c["name"], c.get("description", ""), c["sourceInfo"]["source"]) for c in _non_builtin(commands)]


def test_pypi_sources_parse():
    parsed = src.parse_source("pypi:Pi_Review==1.0")
    assert isinstance(parsed, src.PypiSource)
    assert (parsed.name, parsed.specifier, parsed.pinned) == ("pi-review", "==1.0", True)
    assert not src.parse_source("pypi:pi-review>=1,<2").pinned  # type: ignore[union-attr]
    assert src.identity("pypi:pi_review", Path("/")) == src.identity("pypi:Pi-Review==2", Path("/")) == "pypi:pi-review"
    assert src.installed_path(parsed, "user", Path("/a"), Path("/w")) == Path("/a/pypi/pi-review")


@pytest.mark.slow
def test_install_load_update_remove(tmp_path):
    home, work, index = tmp_path / "home", tmp_path / "work", tmp_path / "index"
    work.mkdir()
    index.mkdir()
    review_wheel(index, "1.0.0")
    env = _pip_env(home, index)
    done = run_pi("ours", ["install", "pypi:pi-review==1.0.0"], env, work)
    assert done.returncode == 0, done.stderr
    assert _settings(home) == {"packages": ["pypi:pi-review==1.0.0"]}
    target = home / ".pi" / "agent" / "pypi" / "pi-review"
    assert (target / "pi_review" / "words.py").is_file()
    assert _review(env, work) == [("review", "review 1.0.0", "pypi:pi-review==1.0.0")]
    assert "pi_review" not in sys.modules  # installed in its own folder, not this environment

    review_wheel(index, "1.1.0")
    pinned = run_pi("ours", ["update", "--extensions"], env, work)
    assert pinned.stdout.splitlines()[-1] == "Packages are already up to date"
    (home / ".pi" / "agent" / "settings.json").write_text(json.dumps({"packages": ["pypi:pi-review"]}))
    updated = run_pi("ours", ["update", "--extensions"], env, work)
    assert updated.returncode == 0, updated.stderr
    assert updated.stdout.splitlines()[-2:] == ["Updated 1 package:", "  pypi:pi-review 1.0.0 -> 1.1.0"]
    assert _review(env, work) == [("review", "review 1.1.0", "pypi:pi-review")]

    removed = run_pi("ours", ["remove", "pypi:pi-review"], env, work)
    assert removed.returncode == 0, removed.stderr
    assert not target.exists() and _settings(home) == {"packages": []}


@pytest.mark.slow
def test_a_pinned_version_not_installed_is_installed_at_start(tmp_path):
    home, work, index = tmp_path / "home", tmp_path / "work", tmp_path / "index"
    work.mkdir()
    index.mkdir()
    for version in ("1.0.0", "1.1.0"):
        review_wheel(index, version)
    env = _pip_env(home, index)
    (home / ".pi" / "agent" / "settings.json").write_text(json.dumps({"packages": ["pypi:pi-review==1.0.0"]}))
    assert _review(env, work) == [("review", "review 1.0.0", "pypi:pi-review==1.0.0")]
    (home / ".pi" / "agent" / "settings.json").write_text(json.dumps({"packages": ["pypi:pi-review==1.1.0"]}))
    assert _review(env, work) == [("review", "review 1.1.0", "pypi:pi-review==1.1.0")]


@pytest.mark.slow
def test_failures_are_named(tmp_path):
    """No entry points, or nothing to install: the package is skipped with the reason, the run goes on."""
    home, work, index = tmp_path / "home", tmp_path / "work", tmp_path / "index"
    work.mkdir()
    index.mkdir()
    build_wheel(index, "pi-plain", "1.0.0", {"pi_plain/__init__.py": ""}, {})
    env = _pip_env(home, index)
    (home / ".pi" / "agent" / "settings.json").write_text(
        json.dumps({"packages": ["pypi:pi-plain", "pypi:pi-missing"]}))
    records, _ = rpc_records("ours", [], env, work, [{"type": "get_state", "id": "s"}])
    assert any(r.get("id") == "s" and r["success"] for r in records)
    errors = {e["extensionPath"]: e["error"] for e in records if e.get("type") == "extension_error"}
    assert errors["pypi:pi-plain"].endswith("declares no pi_coding_agent.extensions entry points")
    assert "-m pip install" in errors["pypi:pi-missing"]
    assert errors["pypi:pi-missing"].endswith(" pi-missing failed with code 1")


@pytest.mark.slow
def test_e_installs_into_the_temporary_cache(tmp_path):
    home, work, index = tmp_path / "home", tmp_path / "work", tmp_path / "index"
    work.mkdir()
    index.mkdir()
    review_wheel(index, "1.0.0")
    commands, stderr = get_commands("ours", ["-e", "pypi:pi-review"], _pip_env(home, index), work)
    assert [(c["name"], c["sourceInfo"]["source"]) for c in _non_builtin(commands)] == [("review", "pypi:pi-review")]
    cached = home / ".pi" / "agent" / "tmp" / "extensions" / "pypi"
    assert list(cached.glob("*/pi-review/pi_review/__init__.py")), stderr
    assert not (home / ".pi" / "agent" / "settings.json").exists()


@pytest.mark.slow
def test_e_is_refreshed_on_each_start_unless_pinned_or_offline(tmp_path):
    """As pi does for an unpinned ``-e npm:`` package: a newer version the index offers replaces the
    cached copy at the next start; a pinned one stays, and so does any in offline mode."""
    home, work, index = tmp_path / "home", tmp_path / "work", tmp_path / "index"
    work.mkdir()
    index.mkdir()
    review_wheel(index, "1.0.0")
    env = _pip_env(home, index)

    def described(*argv: str, **extra: str) -> list[str]:
        commands, stderr = get_commands("ours", list(argv), {**env, **extra}, work)
        return [c.get("description", "") for c in _non_builtin(commands)] or [stderr]

    assert described("-e", "pypi:pi-review") == ["review 1.0.0"]
    assert described("-e", "pypi:pi-review==1.0.0") == ["review 1.0.0"]
    review_wheel(index, "1.1.0")
    assert described("-e", "pypi:pi-review", PI_OFFLINE="1") == ["review 1.0.0"]
    assert described("-e", "pypi:pi-review") == ["review 1.1.0"]
    assert described("-e", "pypi:pi-review==1.0.0") == ["review 1.0.0"]


@pytest.mark.slow
def test_a_registry_source_without_a_name_is_refused(tmp_path):
    """pi 1.6.0 installs ``npm:`` alone (exit 0) and records it; ours names what is missing and
    records nothing, and ``pypi:`` with no requirement is not taken for a path."""
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    env = _env(home)
    for source, reason in (("npm:", "npm: needs a package name"), ("pypi:", "not a pip requirement: ''"),
                           ("pypi:==1", "not a pip requirement: '==1'")):
        done = run_pi("ours", ["install", source], env, work)
        assert done.returncode == 1 and reason in done.stderr
    assert not (home / ".pi" / "agent" / "settings.json").exists()
