"""``pi config``: the groups pi 1.6.0's picker lists (packages, top-level resources of the agent dir and
the project, built-ins), the patterns a toggle writes in the user view and a cycle in the project view,
through the logic, through the Textual screen (``run_test`` pilot) and, key for key, against the
reference in a terminal (tmux); the help and the trust rule against the reference.
"""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import pytest

from pi_coding_agent.coding.packages.resource_config import ResourceItem, build_groups, resolve_items
from pi_coding_agent.coding.packages.resource_overrides import ProjectOverrides, item_key, toggle_user
from tests.coding.packages.test_packages import _env
from tests.support.cli_sides import needs_reference, pi_command
from tests.support.package_fixtures import get_commands, make_package, run_pi

BUILTINS = ["codemode", "llama.cpp", "mcp", "tool-search"]
TS_EXTENSION = "export default function (pi: any) {}\n"


PY_EXTENSION = "def setup(pi):\n    pi.register_command('topcmd', description='t', handler=lambda a, c: None)\n"


def _layout(root: Path, top: str = "top.py") -> tuple[Path, Path]:
    """``root/home`` with a package and top-level resources of each type, ``root/work`` a project with
    its own; returns (agent dir, project dir). ``top``: the name of one top-level extension."""
    agent, work = root / "home" / ".pi" / "agent", root / "work"
    files = {
        agent / "extensions" / top: PY_EXTENSION if top.endswith(".py") else TS_EXTENSION,
        agent / "extensions" / "sub" / "index.ts": TS_EXTENSION,
        agent / "skills" / "myskill" / "SKILL.md": "---\nname: myskill\ndescription: mine\n---\nx\n",
        agent / "prompts" / "review.md": "---\ndescription: r\n---\nx\n",
        agent / "themes" / "mytheme.json": json.dumps({"name": "mytheme", "colors": {}}),
        work / ".pi" / "extensions" / "pe.ts": TS_EXTENSION,
        work / ".pi" / "skills" / "projskill" / "SKILL.md": "---\nname: projskill\ndescription: p\n---\nx\n",
        work / ".pi" / "prompts" / "projp.md": "---\ndescription: p\n---\nx\n",
    }
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    make_package(root / "pkg", "pkg", ts_command="pkgcmd")
    (agent / "settings.json").write_text(json.dumps({"packages": [str(root / "pkg")]}))
    (work / ".git").mkdir()
    return agent, work


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return _layout(tmp_path)


def _json(path: Path) -> dict:
    return json.loads(path.read_text())


def _shown(items: list[ResourceItem], agent: Path) -> list[tuple[str, dict[str, list[str]]]]:
    return [(g.label, {k: [i.display for i in v] for k, v in g.kinds.items()}) for g in build_groups(items, agent)]


def _find(items: list[ResourceItem], display: str) -> ResourceItem:
    return next(i for i in items if i.display == display)


def test_the_user_view_lists_packages_then_top_level_then_built_ins(tree, tmp_path):
    agent, work = tree
    assert _shown(resolve_items(agent, work, False, BUILTINS), agent) == [
        (f"{tmp_path / 'pkg'} (user)", {"extensions": ["ext.ts"], "skills": ["hello"], "prompts": ["rev.md"]}),
        ("User (~/.pi/agent/)", {"extensions": ["sub/index.ts", "top.py"], "skills": ["myskill"],
                                 "prompts": ["review.md"], "themes": ["mytheme.json"]}),
        ("Built-in", {"extensions": BUILTINS}),
    ]
    project = _shown(resolve_items(agent, work, True, BUILTINS), agent)
    assert project[-1] == (f"Project ({work}/.pi/)", {"extensions": ["pe.ts"], "skills": ["projskill"],
                                                      "prompts": ["projp.md"]})


def test_user_toggles_write_what_pi_writes(tree, tmp_path):
    agent, work = tree
    items = resolve_items(agent, work, False, BUILTINS)
    for name in ("sub/index.ts", "top.py", "myskill", "codemode", "hello", "mytheme.json"):
        assert toggle_user(_find(items, name), agent, work) is False
    assert _json(agent / "settings.json") == {
        "packages": [{"source": str(tmp_path / "pkg"), "skills": ["-skills/hello/SKILL.md"]}],
        "extensions": ["-extensions/sub/index.ts", "-extensions/top.py", "-builtin:codemode"],
        "skills": ["-skills/myskill/SKILL.md"], "themes": ["-themes/mytheme.json"]}
    again = resolve_items(agent, work, False, BUILTINS)
    assert [i.display for i in again if not i.enabled] == ["hello", "sub/index.ts", "top.py", "myskill",
                                                           "mytheme.json", "codemode"]
    _find(again, "top.py").enabled = False
    assert toggle_user(_find(again, "top.py"), agent, work) is True  # the earlier pattern is replaced
    assert _json(agent / "settings.json")["extensions"] == ["-extensions/sub/index.ts", "-builtin:codemode",
                                                            "+extensions/top.py"]
    _find(again, "hello").enabled = False
    toggle_user(_find(again, "hello"), agent, work)  # a package entry without filters is a string again
    assert _json(agent / "settings.json")["packages"] == [{"source": str(tmp_path / "pkg"),
                                                           "skills": ["+skills/hello/SKILL.md"]}]


def test_a_top_level_extension_switched_off_does_not_load(tree):
    agent, work = tree
    commands, _ = get_commands("ours", [], _env(agent.parent.parent), work)
    assert "topcmd" in [c["name"] for c in commands]
    toggle_user(_find(resolve_items(agent, work, False, []), "top.py"), agent, work)
    commands, _ = get_commands("ours", [], _env(agent.parent.parent), work)
    assert "topcmd" not in [c["name"] for c in commands]


def test_a_package_resource_switched_off_does_not_load(tree):
    agent, work = tree
    toggle_user(_find(resolve_items(agent, work, False, []), "rev.md"), agent, work)
    commands, _ = get_commands("ours", [], _env(agent.parent.parent), work)
    assert sorted(c["name"] for c in commands if c["sourceInfo"].get("origin") == "package") == ["pkgcmd", "skill:hello"]


def test_project_cycles_write_overrides_and_go_back_to_inherit(tree, tmp_path):
    agent, work = tree
    user_items = resolve_items(agent, work, False, BUILTINS)
    overrides = ProjectOverrides(agent, work, {item_key(i): i.enabled for i in user_items})
    items = resolve_items(agent, work, True, BUILTINS)
    assert [overrides.cycle(_find(items, n)) for n in ("ext.ts", "top.py", "mcp", "projskill")] == [False] * 4
    assert overrides.cycle(_find(items, "rev.md")) is False and overrides.cycle(_find(items, "rev.md")) is True
    assert _json(work / ".pi" / "settings.json") == {
        "packages": [{"source": "../../pkg", "autoload": False, "extensions": ["-extensions/ext.ts"],
                      "prompts": ["+prompts/rev.md"]}],
        "extensions": [str(agent / "extensions" / "top.py"), f"-{agent / 'extensions' / 'top.py'}", "-builtin:mcp"],
        "skills": ["-skills/projskill/SKILL.md"]}
    assert overrides.state(_find(items, "rev.md")) == "load"
    relisted = _shown(resolve_items(agent, work, True, BUILTINS), agent)  # a new run: the overrides' groups
    assert relisted[:2] == [(f"{tmp_path / 'pkg'} (user)", {"skills": ["hello"]}),
                            ("../../pkg (project)", {"extensions": ["ext.ts"], "prompts": ["rev.md"]})]
    assert relisted[-2:] == [("Built-in (project override)", {"extensions": ["mcp"]}),
                             ("Project settings", {"extensions": ["top.py"]})]
    for name, presses in (("ext.ts", 2), ("rev.md", 1), ("top.py", 2), ("mcp", 2), ("projskill", 2)):
        for _ in range(presses):
            overrides.cycle(_find(items, name))
    assert _json(work / ".pi" / "settings.json") == {"packages": [], "extensions": [], "skills": []}
    assert {overrides.state(i) for i in items} == {"inherit"}


async def test_the_screen_searches_toggles_and_switches_views(tree):
    from pi_coding_agent.coding.modes.interactive.resource_config import ResourceConfigApp

    agent, work = tree
    app = ResourceConfigApp(agent, work, "user", project_allowed=True, builtins=BUILTINS)
    async with app.run_test(size=(100, 50)) as pilot:
        assert app.rows[app.selected].item.display == "ext.ts"
        await pilot.press("s", "k", "i", "l", "l")
        await pilot.pause()
        assert [r.item.display for r in app.rows if r.item] == ["hello", "myskill"]
        assert [r.group.label for r in app.rows if r.kind is None and r.item is None][-1] == "User (~/.pi/agent/)"
        await pilot.press("down", "space")  # Space toggles; it is never typed into the search
        await pilot.pause()
        assert app.query_one("#search").value == "skill"
        assert _json(agent / "settings.json")["skills"] == ["-skills/myskill/SKILL.md"]
        assert "[ ] myskill" in str(app.list_text())
        await pilot.press("tab", "space")
        await pilot.pause()
        assert "Project Local Resources" in str(app.query_one("#title").render())
        assert "[-] hello  project unload" in str(app.list_text())
        assert _json(work / ".pi" / "settings.json")["packages"][0]["skills"] == ["-skills/hello/SKILL.md"]
        await pilot.press("backspace", "backspace", "backspace", "backspace", "backspace", "z", "z", "z")
        await pilot.pause()
        assert str(app.list_text()).strip() == "No resources found"
        await pilot.press("escape")
    assert app.return_code == 0


# ---------------------------------------------------------------------- side by side


# the same keys in both: user view toggles, a search, then project view cycles; then, in a new run
# that starts in the project view (where the overrides now form their own groups), cycles back
_KEYS = ["Down", "Down", "Down", "Space", "Down", "Space", "Down", "Space", "Down", "Down", "Down", "Space",
         "s", "k", "i", "l", "l", "Space", "BSpace", "BSpace", "BSpace", "BSpace", "BSpace", "Tab",
         "Space", "Down", "Space", "Down", "Space", "Space", "Down", "Down", "Space", "Down", "Down", "Down",
         "Down", "Down", "Down", "Down", "Down", "Down", "Space", "Down", "Space", "Space"]
_AGAIN_KEYS = ["Space", "Space", "Down", "Space", "Down", "Space", "PageDown", "Space"]


def _session(kind: str, argv: list[str], keys: list[str], env: dict[str, str], work: Path) -> None:
    from tests.coding.interactive.test_interactive_tmux import Tmux

    command, env = pi_command(kind, argv, env)
    env = {k: v for k, v in env.items() if k not in ("COLUMNS", "LINES")} | {"TERM": "xterm-256color"}
    pane = Tmux(f"{shlex.join(command)}; echo EXITED $?; sleep 60", work, env)
    try:
        screen = pane.wait_for(lambda s: "Resources" in s and "tool-search" in s)
        for key in keys:  # each key changes the screen (cursor, checkbox, query or title)
            pane.keys(key)
            screen = pane.wait_for(lambda s, before=screen: s != before)
        pane.keys("Escape")
        pane.wait_for(lambda s: "EXITED 0" in s)
    finally:
        pane.kill()


def _run_keys(kind: str, root: Path) -> list[dict]:
    agent, work = _layout(root, "top.ts")  # pi lists no Python file
    env = _env(root / "home")
    files = (agent / "settings.json", work / ".pi" / "settings.json")
    found = []
    for argv, keys in ((["config", "-a"], _KEYS), (["config", "-a", "-l"], _AGAIN_KEYS)):
        _session(kind, argv, keys, env, work)
        found += [json.loads(p.read_text().replace(str(root), "ROOT")) for p in files]
    return found


@needs_reference
@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_the_same_keys_write_the_same_settings_as_the_reference(tmp_path):
    ours, reference = (_run_keys(kind, tmp_path / kind) for kind in ("ours", "reference"))
    assert ours[0]["extensions"]  # the keys did toggle something
    assert ours == reference


@needs_reference
@pytest.mark.parametrize("argv", [["config", "--help"], ["config", "-l", "-na"]])
def test_help_and_untrusted_local_as_the_reference(argv, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    answers = []
    for kind in ("ours", "reference"):
        done = run_pi(kind, argv, _env(tmp_path / kind), work, timeout=60)
        answers.append((done.returncode, done.stdout, done.stderr))
    assert answers[0] == answers[1]



# ---------------------------------------------------------------------- autoload: false overrides


@needs_reference
@pytest.mark.parametrize("user_entry, project_entry", [
    ("PKG", {"source": "../../pkg", "autoload": False, "prompts": ["-prompts/rev.md"]}),
    ({"source": "PKG", "skills": ["-skills/hello/SKILL.md"]},
     {"source": "../../pkg", "autoload": False, "skills": ["+skills/hello/SKILL.md"], "prompts": ["!**/*.md"]}),
    (None, {"source": "../../pkg", "autoload": False, "prompts": ["+prompts/rev.md"]}),
], ids=["unload-one", "load-what-the-user-unloads", "no-user-entry"])
def test_an_autoload_false_project_entry_overrides_the_users_as_pi(user_entry, project_entry, tmp_path):
    """The project's ``autoload: false`` entry (what ``pi config`` writes) decides the files it names,
    with its own source and scope; the others keep the user entry's state."""
    loaded = []
    for kind in ("ours", "reference"):
        root = tmp_path / kind
        make_package(root / "pkg", "pkg")
        home, work = root / "home", root / "work"
        env = _env(home)
        user = [json.loads(json.dumps(user_entry).replace("PKG", str(root / "pkg")))] if user_entry else []
        (home / ".pi" / "agent" / "settings.json").write_text(json.dumps({"packages": user}))
        (work / ".pi").mkdir(parents=True)
        (work / ".pi" / "settings.json").write_text(json.dumps({"packages": [project_entry]}))
        commands, _ = get_commands(kind, ["--approve"], env, work)
        loaded.append(sorted((c["name"], c["sourceInfo"]["source"].replace(str(root), "ROOT"), c["sourceInfo"]["scope"])
                             for c in commands if c["sourceInfo"].get("origin") == "package"))
    assert loaded[0] == loaded[1]


@needs_reference
@pytest.mark.parametrize("override", [False, True], ids=["user-only", "project-unloads"])
def test_a_project_unload_of_user_files_holds_at_start_as_in_pi(override, tmp_path):
    """The project view's unload of a user file (its absolute path, then ``-`` that path) keeps the
    user's extension, skill and prompt template from loading, as in pi."""
    loaded = []
    for kind in ("ours", "reference"):
        agent, work = _layout(tmp_path / kind, "top.ts")
        (agent / "extensions" / "top.ts").write_text(
            "export default function (pi: any) { pi.registerCommand('topcmd', {description: 't', "
            "handler: async () => {}}); }\n")
        (agent / "settings.json").write_text("{}")
        files = {"extensions": agent / "extensions" / "top.ts", "skills": agent / "skills" / "myskill" / "SKILL.md",
                 "prompts": agent / "prompts" / "review.md"}
        project = {kind: [str(path), f"-{path}"] for kind, path in files.items()} if override else {}
        (work / ".pi" / "settings.json").write_text(json.dumps(project))
        commands, _ = get_commands(kind, ["--approve"], _env(agent.parent.parent), work)
        loaded.append(sorted(c["name"] for c in commands if c["sourceInfo"]["scope"] == "user"))
    assert loaded[0] == loaded[1] == ([] if override else ["review", "skill:myskill", "topcmd"])


async def test_a_broken_settings_file_is_listed_as_empty_and_never_written(tree):
    """As pi's picker: the resources still show, and a toggle leaves the broken file as it was."""
    from pi_coding_agent.coding.modes.interactive.resource_config import ResourceConfigApp

    agent, work = tree
    (agent / "settings.json").write_text("{broken")
    (work / ".pi" / "settings.json").write_text("[1]")
    app = ResourceConfigApp(agent, work, "user", project_allowed=True, builtins=BUILTINS)
    async with app.run_test(size=(100, 50)) as pilot:
        assert app.rows[app.selected].item.display == "sub/index.ts"  # no package: its entry is unreadable
        await pilot.press("space", "tab", "space")
        await pilot.pause()
        assert "[x] sub/index.ts" in str(app.list_text())
        await pilot.press("escape")
    assert (agent / "settings.json").read_text() == "{broken"
    assert (work / ".pi" / "settings.json").read_text() == "[1]"


# ---------------------------------------------------------------------- the trust question


@pytest.mark.parametrize(("keys", "trusted", "saved"), [
    (["enter"], True, {"WORK": True}),
    (["down", "enter"], True, {"PARENT": True}),
    (["down", "down", "enter"], True, None),  # Trust (this session only)
    (["down", "down", "down", "enter"], False, {"WORK": False}),
    (["down", "down", "down", "down", "enter"], False, None),  # Do not trust (this session only)
    (["escape"], False, None),
])
async def test_pi_config_asks_to_trust_an_untrusted_project_as_pi(tmp_path, keys, trusted, saved):
    """pi's five answers, in its order; what each saves in trust.json (pi's, checked in tmux)."""
    from pi_coding_agent.coding.modes.interactive.trust_prompt import TrustPromptApp
    from pi_coding_agent.coding.resources.trust import trust_question_due

    agent, work = tmp_path / "agent", tmp_path / "work"
    (work / ".pi").mkdir(parents=True)
    agent.mkdir()
    assert not trust_question_due(agent, work, None, "ask")  # nothing in .pi to trust
    (work / ".pi" / "settings.json").write_text("{}")
    assert trust_question_due(agent, work, None, "ask")
    assert not trust_question_due(agent, work, True, "ask") and not trust_question_due(agent, work, None, "never")
    app = TrustPromptApp(agent, work)
    async with app.run_test(size=(120, 20)) as pilot:
        await pilot.pause()
        text = "\n".join(str(label.render()) for label in app.query("Label"))
        assert "Trust project folder?" in text and str(work) in text
        for key in keys:
            await pilot.press(key)
        await pilot.pause()
    assert app.return_value is trusted
    names = {str(work): "WORK", str(tmp_path): "PARENT"}
    written = _json(agent / "trust.json") if (agent / "trust.json").exists() else None
    assert (None if written is None else {names[k]: v for k, v in written.items()}) == saved
    assert trust_question_due(agent, work, None, "ask") is (saved is None)


def _asked_then_shown(kind: str, root: Path) -> tuple[str, str]:
    """``pi config`` in an untrusted project: the question's screen, then the picker's after
    "Trust (this session only)"."""
    from tests.coding.interactive.test_interactive_tmux import Tmux

    work = root / "work"
    (work / ".pi").mkdir(parents=True)
    (work / ".pi" / "settings.json").write_text("{}")
    command, env = pi_command(kind, ["config"], _env(root / "home"))
    env = {k: v for k, v in env.items() if k not in ("COLUMNS", "LINES")} | {"TERM": "xterm-256color"}
    pane = Tmux(f"{shlex.join(command)}; echo EXITED $?; sleep 60", work, env)
    try:
        asked = pane.wait_for(lambda s: "Do not trust (this session only)" in s)
        pane.keys("Down")
        pane.wait_for(lambda s: s != asked)
        pane.keys("Down")
        pane.keys("Enter")
        shown = pane.wait_for(lambda s: "Resources" in s and "tool-search" in s)
        pane.keys("Escape")
        pane.wait_for(lambda s: "EXITED 0" in s)
    finally:
        pane.kill()
    return asked, shown


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
@pytest.mark.parametrize("kind", ["ours", pytest.param("reference", marks=needs_reference)])
def test_pi_config_asks_before_the_picker(kind, tmp_path):
    asked, shown = _asked_then_shown(kind, tmp_path)
    assert "Trust project folder?" in asked and "Trust parent folder (" in asked
    assert "tab switch mode" in shown  # trusted for this run: the project view is offered
    assert not (tmp_path / "home" / ".pi" / "agent" / "trust.json").exists()


# ---------------------------------------------------------------------- missing packages


def test_pi_config_installs_missing_packages_before_listing_them(tmp_path, monkeypatch, capfd):
    """A settings package not installed yet is installed, then listed; a failed one is a warning."""
    from pi_coding_agent.coding.cli.subcommands.config import install_missing
    from pi_coding_agent.coding.resources.settings import Settings
    from tests.support.package_fixtures import bare_repo, serve_directory

    home, work, served = tmp_path / "home", tmp_path / "work", tmp_path / "served"
    work.mkdir()
    agent = home / ".pi" / "agent"
    for key, value in _env(home).items():
        monkeypatch.setenv(key, value)
    bare_repo(make_package(tmp_path / "gitsrc", "gitpkg", skill="gitskill"), served, "owner/repo")
    with serve_directory(served) as url:
        spec, broken = f"git:{url}/owner/repo.git@v1", f"git:{url}/owner/missing.git"
        (agent / "settings.json").write_text(json.dumps({"packages": [spec, broken]}))
        assert not any(i.origin == "package" for i in resolve_items(agent, work, False, []))
        install_missing(Settings.load(agent, work, project_trusted=False), agent, work)
    listed = [i for i in resolve_items(agent, work, False, []) if i.origin == "package"]
    assert {i.source for i in listed} == {spec} and "gitskill" in {i.display for i in listed}
    warnings = [line for line in capfd.readouterr().err.splitlines() if line.startswith("Warning:")]
    assert len(warnings) == 1  # git's own output is passed through, as pi passes it
    assert warnings[0].startswith(f'Warning: Extension package "{broken}": failed to install (')
    assert warnings[0].endswith(f'Run "pi remove {broken}" to remove it from settings.json.')
