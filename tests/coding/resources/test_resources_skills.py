"""Skills: discovery and precedence (as pi 1.6.0 behaves), validation, prompt index, /skill: expansion."""

from __future__ import annotations

from pathlib import Path

import pytest

from pi_coding_agent.coding.resources.settings import SettingsPath
from pi_coding_agent.coding.resources.skills import (
    Skill,
    SkillReadError,
    expand_skill_command,
    load_skills,
    skills_index,
)


def skill_file(path: Path, description: str | None, name: str | None = None, extra: str = "",
               body: str = "Body") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = ["---"]
    if name is not None:
        lines.append(f"name: {name}")
    if description is not None:
        lines.append(f"description: {description}")
    if extra:
        lines.append(extra)
    lines += ["---", "", body, ""]
    path.write_text("\n".join(lines))
    return path


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Path]:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    agent_dir = home / ".pi" / "agent"
    cwd = tmp_path / "repo" / "pkg"
    agent_dir.mkdir(parents=True)
    cwd.mkdir(parents=True)
    (tmp_path / "repo" / ".git").mkdir()
    return home, agent_dir, cwd


def test_project_resources_win_collisions_like_pi(env: tuple[Path, Path, Path]) -> None:
    # Observed with pi 1.6.0 (--approve): .pi/skills, then .agents/skills, then the user's dirs.
    home, agent_dir, cwd = env
    skill_file(agent_dir / "skills" / "dup" / "SKILL.md", "user")
    skill_file(agent_dir / "skills" / "user-only" / "SKILL.md", "user only")
    skill_file(cwd / ".pi" / "skills" / "dup" / "SKILL.md", "project pi")
    skill_file(cwd / ".agents" / "skills" / "dup" / "SKILL.md", "project agents")
    skill_file(home / ".agents" / "skills" / "dup" / "SKILL.md", "home agents")
    skills, warnings = load_skills(agent_dir, cwd, True, [], [])
    assert [(s.name, s.description, s.scope, s.source) for s in skills] == [
        ("dup", "project pi", "project", "auto"), ("user-only", "user only", "user", "auto")]
    assert sum("collision" in w for w in warnings) == 3
    assert skills[0].source_info() == {"path": str(cwd / ".pi" / "skills" / "dup" / "SKILL.md"), "source": "auto",
                                       "scope": "project", "origin": "top-level", "baseDir": str(cwd / ".pi")}
    assert skills[1].source_info()["baseDir"] == str(agent_dir)
    assert skills[0].base_dir == cwd / ".pi" / "skills" / "dup"


def test_untrusted_project_skills_are_skipped(env: tuple[Path, Path, Path]) -> None:
    home, agent_dir, cwd = env
    skill_file(cwd / ".pi" / "skills" / "p" / "SKILL.md", "p")
    skill_file(cwd / ".agents" / "skills" / "a" / "SKILL.md", "a")
    skill_file(home / ".agents" / "skills" / "h" / "SKILL.md", "h")
    skills, _ = load_skills(agent_dir, cwd, False, [], [])
    assert [(s.name, s.source_info()["baseDir"]) for s in skills] == [("h", str(home / ".agents"))]


def test_agents_dirs_walk_up_to_the_git_root_only(env: tuple[Path, Path, Path], tmp_path: Path) -> None:
    _, agent_dir, cwd = env
    skill_file(cwd.parent / ".agents" / "skills" / "in-repo" / "SKILL.md", "in repo")
    skill_file(tmp_path / ".agents" / "skills" / "outside" / "SKILL.md", "outside the repo")
    skills, _ = load_skills(agent_dir, cwd, True, [], [])
    assert [s.name for s in skills] == ["in-repo"]


def test_loose_markdown_rules_per_layout(env: tuple[Path, Path, Path]) -> None:
    _, agent_dir, cwd = env
    skill_file(agent_dir / "skills" / "top.md", "top-level loose file", name="top")
    skill_file(agent_dir / "skills" / "group" / "nested.md", "not picked in the pi layout", name="nested")
    skill_file(cwd / ".agents" / "skills" / "top.md", "not picked in the agents layout", name="agents-top")
    skill_file(cwd / ".agents" / "skills" / "grp" / "loose.md", "named after its folder")
    skill_file(agent_dir / "skills" / "nodesc.md", None, name="nodesc")
    skill_file(agent_dir / "skills" / "outer" / "SKILL.md", "outer")
    skill_file(agent_dir / "skills" / "outer" / "inner" / "SKILL.md", "never reached", name="inner")
    skills, warnings = load_skills(agent_dir, cwd, True, [], [])
    assert sorted(s.name for s in skills) == ["grp", "outer", "top"]
    assert warnings == []  # a loose file without a description is silently not a skill


def test_validation_warnings_and_missing_description(env: tuple[Path, Path, Path]) -> None:
    _, agent_dir, cwd = env
    skill_file(agent_dir / "skills" / "a" / "SKILL.md", "ok", name="Bad--Name-")
    skill_file(agent_dir / "skills" / "b" / "SKILL.md", None)
    skill_file(agent_dir / "skills" / "c" / "SKILL.md", "x" * 1025)
    skill_file(agent_dir / "skills" / "d" / "SKILL.md", "d", name="n" * 65)
    skills, warnings = load_skills(agent_dir, cwd, True, [], [])
    assert sorted(s.name for s in skills) == ["Bad--Name-", "c", "n" * 65]
    text = "\n".join(warnings)
    for problem in ("name contains invalid characters (must be lowercase a-z, 0-9, hyphens only)",
                    "name must not start or end with a hyphen", "name must not contain consecutive hyphens",
                    "description is required", "description exceeds 1024 characters (1025)",
                    "name exceeds 64 characters (65)"):
        assert problem in text


def test_broken_frontmatter_warns_for_skill_md(env: tuple[Path, Path, Path]) -> None:
    _, agent_dir, cwd = env
    bad = agent_dir / "skills" / "bad" / "SKILL.md"
    bad.parent.mkdir(parents=True)
    bad.write_text("---\ndescription: [unclosed\n---\nbody\n")
    skills, warnings = load_skills(agent_dir, cwd, True, [], [])
    assert skills == [] and len(warnings) == 1 and str(bad) in warnings[0]


def test_disable_model_invocation_and_cli_and_settings_paths(env: tuple[Path, Path, Path], tmp_path: Path) -> None:
    _, agent_dir, cwd = env
    skill_file(agent_dir / "skills" / "hidden" / "SKILL.md", "hidden", extra="disable-model-invocation: true")
    skill_file(tmp_path / "cli" / "cli-skill" / "SKILL.md", "from cli")
    skill_file(tmp_path / "shared" / "set-skill" / "SKILL.md", "from settings")
    skill_file(tmp_path / "shared" / "old-skill" / "SKILL.md", "filtered out")
    settings = [SettingsPath("../../../shared", agent_dir, "user"), SettingsPath("!old-*", agent_dir, "user")]
    skills, warnings = load_skills(agent_dir, cwd, True, [str(tmp_path / "cli"), "missing-dir"], settings)
    assert [s.name for s in skills] == ["set-skill", "hidden", "cli-skill"]
    assert skills[1].disable_model_invocation is True
    assert skills[0].source_info() == {"path": str(tmp_path / "shared" / "set-skill" / "SKILL.md"),
                                       "source": "local", "scope": "user", "origin": "top-level"}
    assert skills[2].source_info()["scope"] == "temporary"
    assert skills[2].source_info()["baseDir"] == str(tmp_path / "cli" / "cli-skill")
    assert warnings == [f"Warning: Skill path does not exist: {cwd / 'missing-dir'}"]


def test_no_skills_keeps_only_cli_paths(env: tuple[Path, Path, Path], tmp_path: Path) -> None:
    _, agent_dir, cwd = env
    skill_file(agent_dir / "skills" / "auto" / "SKILL.md", "auto")
    cli = skill_file(tmp_path / "one.md", "single file skill", name="one")
    skills, _ = load_skills(agent_dir, cwd, True, [str(cli)], ["x"], include_defaults=False)
    assert [s.name for s in skills] == ["one"]


def make_skill(tmp_path: Path, name: str, description: str, hidden: bool = False) -> Skill:
    path = tmp_path / name / "SKILL.md"
    return Skill(name=name, description=description, path=path, base_dir=path.parent,
                 disable_model_invocation=hidden)


@pytest.mark.parametrize(("reader", "hint"), [
    ("read", "Use the read tool to load a skill's file when the task matches its description."),
    ("bash", "Use bash to load a skill's file when the task matches its description."),
    ("indirect", "Load a skill's file when the task matches its description."),
])
def test_skills_index_text(tmp_path: Path, reader: str, hint: str) -> None:
    skills = [make_skill(tmp_path, "a", "Does <x> & 'y'"), make_skill(tmp_path, "b", "hidden", hidden=True)]
    assert skills_index(skills, reader) == "\n".join([
        "The following skills provide specialized instructions for specific tasks.",
        hint,
        "Resolve relative paths against the skill's directory (parent of SKILL.md). Use absolute paths in tool calls.",
        "",
        "<available_skills>",
        "  <skill>",
        "    <name>a</name>",
        "    <description>Does &lt;x&gt; &amp; &apos;y&apos;</description>",
        f"    <location>{tmp_path / 'a' / 'SKILL.md'}</location>",
        "  </skill>",
        "</available_skills>",
    ])
    assert skills_index(skills[1:], reader) == ""


def test_expand_skill_command(tmp_path: Path) -> None:
    skill = make_skill(tmp_path, "demo", "d")
    skill_file(skill.path, "d", body="  Step one.\n\nStep two.  ")
    block = (f'<skill name="demo" location="{skill.path}">\nReferences are relative to {skill.base_dir}.\n\n'
             "Step one.\n\nStep two.\n</skill>")
    assert expand_skill_command("/skill:demo", [skill]) == block
    assert expand_skill_command("/skill:demo   fix the bug  ", [skill]) == f"{block}\n\nfix the bug"
    assert expand_skill_command("/skill:other x", [skill]) == "/skill:other x"
    assert expand_skill_command("please /skill:demo", [skill]) == "please /skill:demo"


def test_unreadable_skill_leaves_text_and_reports(tmp_path: Path) -> None:
    skill = make_skill(tmp_path, "gone", "d")
    errors: list[SkillReadError] = []
    assert expand_skill_command("/skill:gone now", [skill], errors.append) == "/skill:gone now"
    assert len(errors) == 1 and errors[0].skill is skill and str(skill.path) in str(errors[0])
