"""pi packages: sources, manifests, ``pi install|remove|list|update`` and what a session loads from them.

Git packages come from a bare repository served over HTTP on 127.0.0.1, npm packages from a local
registry serving ``npm pack`` tarballs, so the real ``git`` and ``npm`` run without the internet.
The side-by-side tests share one agent dir between the reference pi and ours: what one installs,
the other loads.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pi_coding_agent.coding.extensions.typescript.host import runtime_dir
from pi_coding_agent.coding.packages import manifest
from pi_coding_agent.coding.packages import sources as src
from pi_coding_agent.coding.packages.manifest import apply_patterns, package_resources
from tests.support.cli_sides import needs_reference
from tests.support.package_fixtures import (
    bare_repo,
    get_commands,
    git,
    have,
    make_package,
    npm_env,
    npm_registry,
    rpc_records,
    run_pi,
    serve_directory,
)
from tests.support.reference_pi import REFERENCE_PI

needs_git = pytest.mark.skipif(not have("git"), reason="git is not on PATH")
needs_npm = pytest.mark.skipif(not have("npm"), reason="npm is not on PATH")


def _env(home: Path) -> dict[str, str]:
    agent = home / ".pi" / "agent"
    agent.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PI_OFFLINE", "PI_CODING_AGENT_DIR")}
    return {**env, "HOME": str(home), "npm_config_update_notifier": "false"}


def _settings(home: Path) -> dict:
    return json.loads((home / ".pi" / "agent" / "settings.json").read_text())


def _non_builtin(commands: list[dict]) -> list[dict]:
    return sorted((c for c in commands if c["sourceInfo"]["source"] != "builtin"), key=lambda c: c["name"])


# ---------------------------------------------------------------------- sources


@pytest.mark.parametrize(("text", "expected"), [
    ("npm:@scope/tools@1.2.3", src.NpmSource("@scope/tools@1.2.3", "@scope/tools", "1.2.3")),
    ("npm:pi-aliases", src.NpmSource("pi-aliases", "pi-aliases", None)),
    ("git:github.com/owner/repo@v1", src.GitSource("https://github.com/owner/repo", "github.com", "owner/repo", "v1")),
    ("https://github.com/owner/repo.git@abc123",
     src.GitSource("https://github.com/owner/repo.git", "github.com", "owner/repo", "abc123")),
    ("git:git@github.com:owner/repo@main", src.GitSource("git@github.com:owner/repo", "github.com", "owner/repo", "main")),
    ("git:http://127.0.0.1:8080/o/r.git", src.GitSource("http://127.0.0.1:8080/o/r.git", "127.0.0.1", "o/r", None)),
    ("./local", src.LocalSource("./local")),
    ("file:///tmp/repo.git", src.LocalSource("file:///tmp/repo.git")),  # pi: a file URL is a path
    ("git://127.0.0.1/o/r.git", src.LocalSource("git://127.0.0.1/o/r.git")),  # pi: needs git:git://
    ("git:github.com/../../etc", src.LocalSource("git:github.com/../../etc")),  # escapes the install root
])
def test_sources_parse_as_pi_parses_them(text, expected):
    assert src.parse_source(text) == expected


def test_install_paths_are_pis(tmp_path):
    agent, cwd = tmp_path / "agent", tmp_path / "cwd"
    npm = src.parse_source("npm:@s/x@1.0.0")
    git = src.parse_source("git:example.com/o/r@v1")
    assert src.installed_path(npm, "user", agent, cwd) == agent / "npm" / "node_modules" / "@s" / "x"
    assert src.installed_path(npm, "project", agent, cwd) == cwd / ".pi" / "npm" / "node_modules" / "@s" / "x"
    assert src.installed_path(git, "user", agent, cwd) == agent / "git" / "example.com" / "o" / "r"
    # -e caches: sha256("npm-")[:8] and sha256("git-example.com-o/r@v1")[:8], as pi names them
    assert src.installed_path(npm, "temporary", agent, cwd) == \
        agent / "tmp" / "extensions" / "npm" / "f35b2129" / "node_modules" / "@s" / "x"
    assert src.installed_path(git, "temporary", agent, cwd) == \
        agent / "tmp" / "extensions" / "git-example.com" / "55738536" / "o" / "r"


def test_identity_ignores_ref_protocol_and_version(tmp_path):
    assert src.identity("npm:x@1.0.0", tmp_path) == src.identity("npm:x", tmp_path)
    assert src.identity("git:github.com/o/r@v1", tmp_path) == src.identity("https://github.com/o/r", tmp_path)
    assert src.identity("../p", tmp_path / "a") == src.identity(str(tmp_path / "p"), tmp_path)


# ---------------------------------------------------------------------- manifests


def test_manifest_globs_and_exclusions(tmp_path):
    root = make_package(tmp_path / "p", "p", pi={
        "extensions": ["./src/*.ts", "!src/legacy.ts"], "skills": ["skills"], "prompts": ["prompts/*.md"]})
    (root / "src").mkdir()
    for name in ("a.ts", "legacy.ts", "b.js"):
        (root / "src" / name).write_text("")
    (root / "themes").mkdir()
    (root / "themes" / "dark.json").write_text("{}")  # not in the manifest: not loaded
    files = package_resources(root)
    assert files is not None
    assert files["extensions"] == [root / "src" / "a.ts"]
    assert files["skills"] == [root / "skills" / "hello" / "SKILL.md"]
    assert files["prompts"] == [root / "prompts" / "rev.md"]
    assert files["themes"] == []


def test_conventional_folders_python_extensions_and_settings_narrowing(tmp_path):
    root = make_package(tmp_path / "p", "p", ts_command="t", python_command="py")
    (root / "themes").mkdir()
    (root / "themes" / "t.json").write_text("{}")
    files = package_resources(root)
    assert files is not None
    assert files["extensions"] == [root / "extensions" / "ext.ts", root / "extensions" / "ext.py"]
    assert files["themes"] == [root / "themes" / "t.json"]
    entry = {"source": "x", "skills": [], "extensions": ["!extensions/ext.ts"]}
    narrowed = {kind: manifest.narrowed(paths, entry.get(kind), root) for kind, paths in files.items()}
    assert narrowed["skills"] == [] and narrowed["extensions"] == [root / "extensions" / "ext.py"]
    assert narrowed["prompts"] == [root / "prompts" / "rev.md"]


def test_pattern_steps(tmp_path):
    files = [tmp_path / "a" / "x.md", tmp_path / "a" / "y.md", tmp_path / "b" / "z.md"]
    assert apply_patterns(files, ["a/*.md", "!**/y.md"], tmp_path) == {files[0]}
    assert apply_patterns(files, ["!a/*", "+a/y.md"], tmp_path) == {files[1], files[2]}
    assert apply_patterns(files, ["+a/y.md", "-a/y.md", "!*.md"], tmp_path) == set()


def test_a_folder_without_resources_is_not_a_package(tmp_path):
    (tmp_path / "empty").mkdir()
    assert package_resources(tmp_path / "empty") is None


# ---------------------------------------------------------------------- commands and sessions


@pytest.mark.slow
def test_install_list_remove_a_local_package(tmp_path):
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    make_package(tmp_path / "localpkg", "localpkg")
    env = _env(home)
    done = run_pi("ours", ["install", "../localpkg"], env, work)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["Installing ../localpkg...", "Installed ../localpkg"]
    assert _settings(home) == {"packages": ["../../../localpkg"]}  # relative to the settings file
    listed = run_pi("ours", ["list"], env, work).stdout.splitlines()
    assert listed == ["User packages:", "  ../../../localpkg", f"    {tmp_path / 'localpkg'}"]
    assert run_pi("ours", ["install", "./missing"], env, work).returncode == 1
    removed = run_pi("ours", ["uninstall", str(tmp_path / "localpkg")], env, work)
    assert removed.returncode == 0 and _settings(home) == {"packages": []}
    again = run_pi("ours", ["remove", "../localpkg"], env, work)
    assert again.returncode == 1 and "No matching package found for ../localpkg" in again.stderr


@needs_reference
@pytest.mark.parametrize("args", [["install", "./missing"], ["remove", "npm:nothing-here"], ["list"]])
def test_commands_on_nothing_answer_as_pi(args, tmp_path):
    """Bad or empty cases a user meets first: the same lines on each stream and the same status."""
    results = []
    for side in ("ours", "reference"):
        home, work = tmp_path / side / "home", tmp_path / side / "work"
        work.mkdir(parents=True)
        done = run_pi(side, args, _env(home), work)
        results.append((done.returncode, done.stdout, done.stderr.replace(str(work), "WORK")))
    assert results[0] == results[1]


@pytest.mark.slow
def test_local_install_needs_a_trusted_project(tmp_path):
    home, work = tmp_path / "home", tmp_path / "work"
    (work / ".pi").mkdir(parents=True)
    (work / "AGENTS.md").write_text("x")
    make_package(tmp_path / "p", "p")
    env = _env(home)
    refused = run_pi("ours", ["install", "-l", "../p", "--no-approve"], env, work)
    assert refused.returncode == 1 and "Project is not trusted" in refused.stderr
    done = run_pi("ours", ["install", "-l", "../p", "--approve"], env, work)
    assert done.returncode == 0, done.stderr
    assert json.loads((work / ".pi" / "settings.json").read_text()) == {"packages": ["../../p"]}


@pytest.mark.slow
def test_project_packages_load_only_in_a_trusted_project_and_win_over_the_users(tmp_path):
    home, work = tmp_path / "home", tmp_path / "work"
    (work / ".pi").mkdir(parents=True)
    make_package(tmp_path / "p", "p")
    env = _env(home)
    (work / ".pi" / "settings.json").write_text(json.dumps({"packages": ["../../p"]}))
    (home / ".pi" / "agent" / "settings.json").write_text(json.dumps({"packages": [str(tmp_path / "p")]}))
    untrusted, _ = get_commands("ours", ["--no-approve"], env, work)
    assert {c["sourceInfo"]["scope"] for c in _non_builtin(untrusted)} == {"user"}
    trusted, _ = get_commands("ours", ["--approve"], env, work)
    assert {(c["sourceInfo"]["scope"], c["sourceInfo"]["source"]) for c in _non_builtin(trusted)} == {
        ("project", "../../p")}
    assert len(_non_builtin(trusted)) == 2  # one package identity: loaded once
    if REFERENCE_PI.exists():  # the same on pi 1.6.0, with and without trust
        for flag, ours in (("--no-approve", untrusted), ("--approve", trusted)):
            assert _non_builtin(get_commands("reference", [flag], env, work)[0]) == _non_builtin(ours)


@pytest.mark.slow
def test_session_loads_a_package_skill_prompt_and_python_extension(tmp_path):
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    make_package(tmp_path / "p", "p", python_command="pycmd")
    env = _env(home)
    assert run_pi("ours", ["install", str(tmp_path / "p")], env, work).returncode == 0
    commands, _ = get_commands("ours", [], env, work)
    info = {"source": "../../../p", "scope": "user", "origin": "package", "baseDir": str(tmp_path / "p")}
    assert _non_builtin(commands) == [
        {"name": "pycmd", "description": "python from p", "source": "extension",
         "sourceInfo": {"path": str(tmp_path / "p" / "extensions" / "ext.py"), **info}},
        {"name": "rev", "description": "Prompt rev of p", "source": "prompt",
         "sourceInfo": {"path": str(tmp_path / "p" / "prompts" / "rev.md"), **info}},
        {"name": "skill:hello", "description": "Skill hello of p", "source": "skill",
         "sourceInfo": {"path": str(tmp_path / "p" / "skills" / "hello" / "SKILL.md"), **info}},
    ]


@pytest.mark.slow
def test_a_skipped_package_is_named_on_stderr_and_as_an_extension_error(tmp_path):
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    env = {**_env(home), "PI_OFFLINE": "1"}
    (home / ".pi" / "agent" / "settings.json").write_text(json.dumps({"packages": ["npm:not-installed-pkg"]}))
    records, stderr = rpc_records("ours", [], env, work, [{"type": "get_commands", "id": "c"}])
    errors = [r for r in records if r.get("type") == "extension_error"]
    assert [e["extensionPath"] for e in errors] == ["npm:not-installed-pkg"]
    assert "offline" in errors[0]["error"]
    assert [line for line in stderr.splitlines() if "not-installed-pkg" in line] == [
        'Error: Failed to load extension "npm:not-installed-pkg": package skipped: '
        "not installed and offline mode is on"]


@needs_git
@pytest.mark.slow
def test_git_package_installs_updates_and_loads(tmp_path):
    home, work, served = tmp_path / "home", tmp_path / "work", tmp_path / "served"
    work.mkdir()
    source = make_package(tmp_path / "gitsrc", "gitpkg", skill="gitskill", prompt="gitprompt")
    bare_repo(source, served, "owner/repo")
    env = _env(home)
    with serve_directory(served) as url:
        spec = f"git:{url}/owner/repo.git@v1"
        done = run_pi("ours", ["install", spec], env, work)
        assert done.returncode == 0, done.stderr
        checkout = home / ".pi" / "agent" / "git" / "127.0.0.1" / "owner" / "repo"
        assert (checkout / "skills" / "gitskill" / "SKILL.md").is_file()
        assert (home / ".pi" / "agent" / "git" / ".gitignore").read_text() == "*\n!.gitignore\n"
        assert _settings(home) == {"packages": [spec]}
        commands, _ = get_commands("ours", [], env, work)
        assert {c["name"] for c in _non_builtin(commands)} == {"gitprompt", "skill:gitskill"}
        assert run_pi("ours", ["update", "--extensions"], env, work).returncode == 0
        assert run_pi("ours", ["remove", spec], env, work).returncode == 0
        assert not checkout.exists() and _settings(home) == {"packages": []}


@needs_npm
@pytest.mark.slow
def test_npm_package_installs_from_a_registry_and_loads(tmp_path):
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    pkg = make_package(tmp_path / "npmsrc", "npm-fixture-pkg", skill="npmskill", prompt="npmprompt")
    with npm_registry([pkg], tmp_path) as registry:
        env = npm_env(_env(home), registry, tmp_path / "npm-cache")
        done = run_pi("ours", ["install", "npm:npm-fixture-pkg@1.0.0"], env, work)
        assert done.returncode == 0, done.stderr
        root = home / ".pi" / "agent" / "npm"
        assert json.loads((root / "package.json").read_text())["name"] == "pi-extensions"
        assert (root / "node_modules" / "npm-fixture-pkg" / "prompts" / "npmprompt.md").is_file()
        commands, _ = get_commands("ours", [], env, work)
        assert {c["name"] for c in _non_builtin(commands)} == {"npmprompt", "skill:npmskill"}
        assert run_pi("ours", ["update", "npm-fixture-pkg"], env, work).returncode == 1  # not a configured source
        assert run_pi("ours", ["update", "npm:npm-fixture-pkg"], env, work).returncode == 0  # pinned: nothing to do
        removed = run_pi("ours", ["remove", "npm:npm-fixture-pkg"], env, work)
        assert removed.returncode == 0, removed.stderr
        assert not (root / "node_modules" / "npm-fixture-pkg").exists() and _settings(home) == {"packages": []}
        # -e npm: one-off, cached where pi caches it; offline, the cached copy loads
        once, _ = get_commands("ours", ["-e", "npm:npm-fixture-pkg"], {**env, "HOME": str(tmp_path / "h2")}, work)
        assert {c["sourceInfo"]["scope"] for c in _non_builtin(once)} == {"temporary"}
    cached = tmp_path / "h2" / ".pi" / "agent" / "tmp" / "extensions" / "npm"
    assert list(cached.glob("*/node_modules/npm-fixture-pkg/package.json"))
    offline, _ = get_commands("ours", ["-e", "npm:npm-fixture-pkg"],
                              {**env, "HOME": str(tmp_path / "h2"), "PI_OFFLINE": "1"}, work)
    assert {c["name"] for c in _non_builtin(offline)} == {"npmprompt", "skill:npmskill"}


def test_e_with_a_package_folder_loads_its_resources(tmp_path):
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    make_package(tmp_path / "p", "p")
    commands, _ = get_commands("ours", ["-e", str(tmp_path / "p")], _env(home), work)
    assert [(c["name"], c["sourceInfo"]["scope"], c["sourceInfo"]["origin"]) for c in _non_builtin(commands)] == [
        ("rev", "temporary", "package"), ("skill:hello", "temporary", "package")]


# ---------------------------------------------------------------------- side by side


@needs_reference
@needs_git
@needs_npm
@pytest.mark.parametrize("installer", ["reference", "ours"])
def test_what_one_side_installs_the_other_loads(tmp_path, installer):
    """Local, git and npm packages installed by one implementation: both list the same commands for
    them, a TypeScript extension's command included."""
    home, work, served = tmp_path / "home", tmp_path / "work", tmp_path / "served"
    work.mkdir()
    make_package(tmp_path / "localpkg", "localpkg", ts_command="hello")
    bare_repo(make_package(tmp_path / "gitsrc", "gitpkg", skill="gitskill", prompt="gitprompt"), served, "o/repo")
    npm_pkg = make_package(tmp_path / "npmsrc", "npm-fixture-pkg", skill="npmskill", prompt="npmprompt")
    with serve_directory(served) as url, npm_registry([npm_pkg], tmp_path) as registry:
        env = {**npm_env(_env(home), registry, tmp_path / "npm-cache"), "PI_TS_RUNTIME_DIR": str(runtime_dir())}
        for source in ("../localpkg", f"git:{url}/o/repo.git@v1", "npm:npm-fixture-pkg@1.0.0"):
            done = run_pi(installer, ["install", source], env, work)
            assert done.returncode == 0, done.stderr
        ours, _ = get_commands("ours", [], env, work)
        reference, _ = get_commands("reference", [], env, work)
    assert _non_builtin(ours) == _non_builtin(reference)
    assert len(_non_builtin(ours)) == 7


@needs_git
@pytest.mark.slow
def test_e_git_package_is_cached_refreshed_and_used_offline(tmp_path):
    """``-e git:...`` clones into pi's temporary cache; the next start fetches the branch's new commit;
    offline, the cached copy loads."""
    home, work, served = tmp_path / "home", tmp_path / "work", tmp_path / "served"
    work.mkdir()
    source = make_package(tmp_path / "gitsrc", "gitpkg", skill="gitskill", prompt="first")
    bare = bare_repo(source, served, "o/repo", tag=None)
    env = _env(home)
    with serve_directory(served) as url:
        spec = f"git:{url}/o/repo.git"
        commands, _ = get_commands("ours", ["-e", spec], env, work)
        assert {c["name"] for c in _non_builtin(commands)} == {"first", "skill:gitskill"}
        cached = src.installed_path(src.parse_source(spec), "temporary", home / ".pi" / "agent", work)
        assert (cached / "prompts" / "first.md").is_file()
        assert (home / ".pi" / "agent" / "tmp" / "extensions").stat().st_mode & 0o777 == 0o700
        (source / "prompts" / "second.md").write_text("---\ndescription: second\n---\nx\n")
        git("add", "-A", cwd=source)
        git("commit", "-qm", "two", cwd=source)
        git("push", "-q", str(bare), "main", cwd=source)
        git("update-server-info", cwd=bare)
        refreshed, _ = get_commands("ours", ["-e", spec], env, work)
        assert {c["name"] for c in _non_builtin(refreshed)} == {"first", "second", "skill:gitskill"}
    offline, _ = get_commands("ours", ["-e", spec], {**env, "PI_OFFLINE": "1"}, work)
    assert {c["name"] for c in _non_builtin(offline)} == {"first", "second", "skill:gitskill"}
    assert not _settings_exists(home)  # -e writes no settings


def _settings_exists(home: Path) -> bool:
    return (home / ".pi" / "agent" / "settings.json").exists()


def test_a_start_without_packages_imports_none_of_their_machinery(tmp_path):
    from tests.test_startup_imports import start_and_get_state

    ext = tmp_path / "plain.py"
    ext.write_text("def setup(pi):\n    pass\n")
    response, modules = start_and_get_state(tmp_path, "-e", str(ext))
    assert response["success"] is True
    assert not {m for m in modules if m.startswith(("pi_coding_agent.coding.packages.",
                                                    "pi_coding_agent.coding.extensions.typescript"))}
