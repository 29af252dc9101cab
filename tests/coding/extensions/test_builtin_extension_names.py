"""``-e builtin:<name>`` for every bundled extension pi 1.6.0 names (its docs teach ``pi -ne -e
builtin:codemode``): accepted, the run goes on, and codemode is declared when ``--tools`` names it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.support.cli_sides import fake_agent_env, needs_reference, pi_command
from tests.support.fakes.llm_server import FakeLLMServer
from tests.support.run_once import ours_once, shared_run

NAMES = ["mcp", "llama.cpp", "codemode", "tool-search"]


def _run(kind: str, root: Path, name: str) -> tuple[int, str, list[str]]:
    """``-p`` with ``-ne -e builtin:<name> --tools +codemode``: status, stdout, tools of the first request."""
    with FakeLLMServer() as server:
        root.mkdir(parents=True)
        env = fake_agent_env(root, server.url)
        argv = ["-p", "--no-session", "--provider", "fake", "--model", "fake-model", "-ne", "-e", f"builtin:{name}",
                *(["-e", "builtin:codemode"] if name != "codemode" else []), "--tools", "+codemode", "hi"]
        command, env = pi_command(kind, argv, env)
        done = subprocess.run(command, env=env, cwd=root, capture_output=True, text=True, timeout=120)
        tools = [t["function"]["name"] for t in server.requests[0]["body"].get("tools", [])] if server.requests else []
    return done.returncode, done.stdout, tools


async def _outcome(kind: str, root: Path, name: str) -> tuple[int, str, list[str]]:
    return _run(kind, root, name)


def _names(slow_from: int) -> list[object]:
    """``NAMES`` as parameters, each in the group of its shared run of ours; from ``slow_from`` on slow."""
    return [pytest.param(name, marks=[shared_run(f"builtin-{name}"), *([pytest.mark.slow] if i >= slow_from else [])])
            for i, name in enumerate(NAMES)]


# one name in the fast subset (each run starts a pi), all of them in the full suite; our run of a
# name serves both its test here and its comparison
@pytest.mark.parametrize("name", _names(slow_from=1))
async def test_builtin_names_are_accepted(tmp_path: Path, name: str) -> None:
    status, stdout, tools = await ours_once(_outcome, tmp_path / "ours", name)
    assert (status, stdout) == (0, "ok\n")
    assert "codemode" in tools


@needs_reference
@pytest.mark.parametrize("name", _names(slow_from=len(NAMES)))
async def test_builtin_names_match_the_reference(tmp_path: Path, name: str) -> None:
    ours, reference = await ours_once(_outcome, tmp_path / "ours", name), _run("reference", tmp_path / "reference", name)
    assert ours[:2] == reference[:2]
    assert "codemode" in ours[2] and "codemode" in reference[2]


def _tools_with_settings(kind: str, root: Path, user: list[str], project: list[str] | None) -> tuple[int, list[str]]:
    """``-p --tools +codemode`` under user (and project) ``extensions`` entries: status, declared tools."""
    with FakeLLMServer() as server:
        root.mkdir(parents=True)
        env = fake_agent_env(root, server.url, {"extensions": user})
        if project is not None:
            (root / ".pi").mkdir()
            (root / ".pi" / "settings.json").write_text(json.dumps({"extensions": project}))
        argv = ["-p", "--no-session", "--provider", "fake", "--model", "fake-model", "--approve", "--tools", "read,codemode", "hi"]
        command, env = pi_command(kind, argv, env)
        done = subprocess.run(command, env=env, cwd=root, capture_output=True, text=True, timeout=120)
        tools = [t["function"]["name"] for t in server.requests[0]["body"].get("tools", [])] if server.requests else []
    return done.returncode, tools


# user entries, project entries (None: no project settings), whether codemode is declared
SWITCHES = [
    (["-builtin:codemode"], None, False),
    (["-builtin:codemode", "+builtin:codemode"], None, False),  # the user's "-" outweighs its "+"
    (["!builtin:*"], None, False),
    (["!builtin:*", "+builtin:codemode"], None, True),
    (["-builtin:codemode"], ["+builtin:codemode"], True),  # the project overrides the user
    ([], ["-builtin:codemode"], False),
    ([], ["-builtin:codemode", "+builtin:codemode"], True),  # the project's last word wins
    (["-builtin:mcp"], None, True),
]


@pytest.mark.parametrize(("user", "project", "declared"), SWITCHES)
def test_settings_switch_codemode(tmp_path: Path, user: list[str], project: list[str] | None,
                                  declared: bool) -> None:
    status, tools = _tools_with_settings("ours", tmp_path / "ours", user, project)
    assert status == 0 and "read" in tools
    assert ("codemode" in tools) == declared


@needs_reference
@pytest.mark.parametrize(("user", "project", "declared"), SWITCHES)
def test_settings_switch_codemode_as_the_reference(tmp_path: Path, user: list[str], project: list[str] | None,
                                                   declared: bool) -> None:
    status, tools = _tools_with_settings("reference", tmp_path / "reference", user, project)
    assert status == 0 and ("codemode" in tools) == declared
