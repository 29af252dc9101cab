"""``pi config``: the installed packages' resources with their state, and the ``+``/``-`` patterns a
toggle writes into the package's settings entry (pi 1.6.0's picker writes the same), through the
logic and through the Textual screen (``run_test`` pilot); the help and the trust rule against the
reference.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pi_coding_agent.coding.packages.resource_config import ResourceItem, package_items, toggle
from tests.coding.packages.test_packages import _env
from tests.support.cli_sides import needs_reference
from tests.support.package_fixtures import get_commands, make_package, run_pi


@pytest.fixture
def agent(tmp_path: Path) -> Path:
    agent = tmp_path / "home" / ".pi" / "agent"
    agent.mkdir(parents=True)
    make_package(tmp_path / "pkg", "pkg", skill="hello", prompt="rev")
    (agent / "settings.json").write_text(json.dumps({"theme": "dark", "packages": [str(tmp_path / "pkg")]}))
    return agent


def _settings(agent: Path) -> dict:
    return json.loads((agent / "settings.json").read_text())


def test_items_and_toggles(agent, tmp_path):
    source = str(tmp_path / "pkg")
    items = package_items("user", agent, tmp_path)
    assert items == [ResourceItem(source, "skills", "skills/hello/SKILL.md", True),
                     ResourceItem(source, "prompts", "prompts/rev.md", True)]
    toggle(items[1], False, "user", agent, tmp_path)
    assert _settings(agent) == {"theme": "dark", "packages": [{"source": source, "prompts": ["-prompts/rev.md"]}]}
    assert [i.enabled for i in package_items("user", agent, tmp_path)] == [True, False]
    toggle(items[1], True, "user", agent, tmp_path)  # the earlier pattern of that path is replaced
    assert _settings(agent)["packages"] == [{"source": source, "prompts": ["+prompts/rev.md"]}]


def test_a_disabled_resource_does_not_load(agent, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    toggle(package_items("user", agent, tmp_path)[0], False, "user", agent, tmp_path)
    commands, _ = get_commands("ours", [], _env(tmp_path / "home"), work)
    assert [c["name"] for c in commands if c["sourceInfo"].get("origin") == "package"] == ["rev"]


async def test_the_screen_toggles_with_space(agent, tmp_path):
    from pi_coding_agent.coding.modes.interactive.resource_config import ResourceConfigApp

    app = ResourceConfigApp(agent, tmp_path, "user", project_allowed=False)
    async with app.run_test() as pilot:
        await pilot.press("down", "space")
        assert _settings(agent)["packages"][0]["prompts"] == ["-prompts/rev.md"]
        assert [i.enabled for i in app.items] == [True, False]
        await pilot.press("space")
        assert _settings(agent)["packages"][0]["prompts"] == ["+prompts/rev.md"]
        await pilot.press("escape")
    assert app.return_code == 0


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
