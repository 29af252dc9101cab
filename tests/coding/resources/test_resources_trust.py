"""Project trust resolution in modes without a UI."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from pi_coding_agent.coding.resources.trust import (
    has_trust_requiring_resources,
    is_project_trusted,
    save_trust_decision,
    saved_trust_decision,
)


@pytest.fixture
def layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    agent_dir = tmp_path / "home" / ".pi" / "agent"
    agent_dir.mkdir(parents=True)
    cwd = tmp_path / "work" / "repo" / "pkg"
    cwd.mkdir(parents=True)
    return agent_dir, cwd


def gate(cwd: Path) -> None:
    (cwd / ".pi").mkdir(exist_ok=True)
    (cwd / ".pi" / "settings.json").write_text("{}")


def test_project_without_gated_resources_is_trusted(layout: tuple[Path, Path]) -> None:
    agent_dir, cwd = layout
    (cwd / ".pi").mkdir()  # a bare .pi dir does not need trust
    assert not has_trust_requiring_resources(cwd)
    assert is_project_trusted(agent_dir, cwd, None, "never") is True


def test_saved_false_applies_even_without_gated_resources(layout: tuple[Path, Path]) -> None:
    agent_dir, cwd = layout
    save_trust_decision(agent_dir, cwd, False)
    assert is_project_trusted(agent_dir, cwd, None, "always") is False


@pytest.mark.parametrize(("default", "expected"), [("ask", False), ("never", False), ("always", True)])
def test_default_trust_when_nothing_saved(layout: tuple[Path, Path], default: str, expected: bool) -> None:
    agent_dir, cwd = layout
    gate(cwd)
    assert is_project_trusted(agent_dir, cwd, None, default) is expected


def test_approve_flags_win(layout: tuple[Path, Path]) -> None:
    agent_dir, cwd = layout
    gate(cwd)
    save_trust_decision(agent_dir, cwd, False)
    assert is_project_trusted(agent_dir, cwd, True, "never") is True
    assert is_project_trusted(agent_dir, cwd.parent, False, "always") is False


def test_nearest_ancestor_decision_wins(layout: tuple[Path, Path]) -> None:
    agent_dir, cwd = layout
    gate(cwd)
    save_trust_decision(agent_dir, cwd.parent.parent, True)
    assert is_project_trusted(agent_dir, cwd, None, "ask") is True
    save_trust_decision(agent_dir, cwd.parent, False)
    assert saved_trust_decision(agent_dir, cwd) is False
    save_trust_decision(agent_dir, cwd.parent, None)  # cleared: the grandparent's decision shows again
    assert saved_trust_decision(agent_dir, cwd) is True
    data = orjson.loads((agent_dir / "trust.json").read_bytes())
    assert list(data) == sorted(data)


def test_agents_skills_in_an_ancestor_need_trust_but_not_the_users_own(layout: tuple[Path, Path]) -> None:
    agent_dir, cwd = layout
    (agent_dir.parent.parent / ".agents" / "skills").mkdir(parents=True)
    assert not has_trust_requiring_resources(agent_dir.parent.parent)
    (cwd.parent / ".agents" / "skills").mkdir(parents=True)
    assert has_trust_requiring_resources(cwd)
    assert is_project_trusted(agent_dir, cwd, None, "ask") is False


def test_malformed_trust_file_counts_as_no_decision(layout: tuple[Path, Path]) -> None:
    agent_dir, cwd = layout
    gate(cwd)
    (agent_dir / "trust.json").write_text("[1, 2")
    assert saved_trust_decision(agent_dir, cwd) is None
    assert is_project_trusted(agent_dir, cwd, None, "always") is True
