"""Skills: directories holding a ``SKILL.md`` (or loose ``.md`` files) with YAML frontmatter.

Discovery is in ``resource_files`` (precedence and filters in ``resource_paths``); this module reads and validates the
files, renders the prompt index and expands ``/skill:name args``. A skill without a description
is not loaded; other rule breaks (bad name, over-long description) only warn, as in pi.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.resources import resource_files as rf
from pi_coding_agent.coding.resources import resource_paths as rp
from pi_coding_agent.coding.resources.frontmatter import parse_frontmatter, strip_frontmatter
from pi_coding_agent.coding.resources.resource_files import SKILL_FILE
from pi_coding_agent.coding.resources.settings import SettingsPath

MAX_NAME_LENGTH = 64
MAX_DESCRIPTION_LENGTH = 1024
NAME_CHARS = re.compile(r"^[a-z0-9-]+$")


@dataclass
class Skill:
    """A skill: its SKILL.md file, described to the model and expanded by ``/skill:name``."""

    name: str
    description: str
    path: Path  # the SKILL.md (or loose .md) file
    base_dir: Path  # the skill's directory: relative references in the body resolve against it
    disable_model_invocation: bool = False
    source: str = "local"  # sourceInfo.source: "auto" | "local"
    scope: str = "temporary"  # sourceInfo.scope: "user" | "project" | "temporary"
    origin: str = "top-level"  # sourceInfo.origin: "package" for a package's file
    source_base_dir: Path | None = None  # sourceInfo.baseDir (the resource root, not base_dir)

    def source_info(self) -> JsonObject:
        """The ``sourceInfo`` object of get_commands."""
        return rf.source_info(self.path, self.source, self.scope, self.source_base_dir, self.origin)


def load_skills(agent_dir: Path, cwd: Path, trusted: bool, extra_paths: Sequence[str],
                settings_paths: Sequence[SettingsPath | str],
                include_defaults: bool = True) -> tuple[list[Skill], list[str]]:
    """(skills in precedence order, warnings). ``include_defaults=False`` is ``--no-skills``:
    only the ``--skill`` paths load."""
    candidates = rf.skill_candidates(agent_dir, cwd, trusted, extra_paths, settings_paths, include_defaults)
    return read_skills(candidates, extra_paths, cwd)


def read_skills(candidates: Sequence[rp.ResourceFile], extra_paths: Sequence[str],
                cwd: Path) -> tuple[list[Skill], list[str]]:
    """The skills of ``candidates`` (``resource_files.skill_candidates``), first of a name wins, and the
    warnings: missing ``--skill`` paths, unusable files, name collisions."""
    warnings: list[str] = []
    for raw in extra_paths:
        path = rp.resolve_entry(raw, cwd)
        if not path.exists():
            warnings.append(f"Warning: Skill path does not exist: {path}")
    skills: dict[str, Skill] = {}
    for item in rp.dedupe_by_real_path(candidates):
        skill = read_skill(item, warnings)
        if skill is None:
            continue
        winner = skills.get(skill.name)
        if winner is not None:
            warnings.append(f'Warning: Skill name "{skill.name}" collision: {skill.path} '
                            f"(using {winner.path})")
            continue
        skills[skill.name] = skill
    return list(skills.values()), warnings


def read_skill(item: rp.ResourceFile, warnings: list[str]) -> Skill | None:
    """Parse one candidate; None (with a warning where pi gives one) when it is not a usable skill."""
    path = item.path
    declared = path.name == SKILL_FILE
    if not path.name.endswith(".md"):
        warnings.append(f"Warning: Skill path is not a markdown file: {path}")
        return None
    try:
        meta, _ = parse_frontmatter(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        if declared or isinstance(exc, OSError):
            warnings.append(f"Warning: Skill {path}: {exc}")
        return None
    description = meta.get("description")
    has_description = isinstance(description, str) and description.strip() != ""
    if not declared and not has_description:
        return None
    name_value = meta.get("name")
    name = name_value if isinstance(name_value, str) and name_value else path.parent.name
    problems = validate_description(description) + validate_name(name)
    warnings.extend(f"Warning: Skill {path}: {p}" for p in problems)
    if not has_description:
        return None
    assert isinstance(description, str)
    return Skill(
        name=name, description=description, path=path, base_dir=path.parent,
        disable_model_invocation=meta.get("disable-model-invocation") is True,
        source=item.source, scope=item.scope, source_base_dir=item.base_dir, origin=item.origin,
    )


def validate_name(name: str) -> list[str]:
    """Agent Skills naming rules: lowercase letters, digits, single inner hyphens, at most 64 chars."""
    problems = []
    if len(name) > MAX_NAME_LENGTH:
        problems.append(f"name exceeds {MAX_NAME_LENGTH} characters ({len(name)})")
    if not NAME_CHARS.match(name):
        problems.append("name contains invalid characters (must be lowercase a-z, 0-9, hyphens only)")
    if name.startswith("-") or name.endswith("-"):
        problems.append("name must not start or end with a hyphen")
    if "--" in name:
        problems.append("name must not contain consecutive hyphens")
    return problems


def validate_description(description: object) -> list[str]:
    if not isinstance(description, str) or not description.strip():
        return ["description is required"]
    if len(description) > MAX_DESCRIPTION_LENGTH:
        return [f"description exceeds {MAX_DESCRIPTION_LENGTH} characters ({len(description)})"]
    return []


# ---------------------------------------------------------------------- prompt index and expansion


def escape_xml(text: str) -> str:
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;").replace("'", "&apos;"))


def skills_index(skills: Sequence[Skill], reader: str) -> str:
    """Content of the ``skills`` prompt section ("" when no skill is visible to the model).

    ``reader`` names how the model loads a skill file: ``read``, ``bash``, or ``indirect`` (a
    reading tool exists but is hidden, so the hint names none).
    """
    visible = [s for s in skills if not s.disable_model_invocation]
    if not visible:
        return ""
    hint = {
        "read": "Use the read tool to load a skill's file when the task matches its description.",
        "bash": "Use bash to load a skill's file when the task matches its description.",
    }.get(reader, "Load a skill's file when the task matches its description.")
    lines = [
        "The following skills provide specialized instructions for specific tasks.",
        hint,
        "Resolve relative paths against the skill's directory (parent of SKILL.md). Use absolute paths in tool calls.",
        "",
        "<available_skills>",
    ]
    for skill in visible:
        lines += [
            "  <skill>",
            f"    <name>{escape_xml(skill.name)}</name>",
            f"    <description>{escape_xml(skill.description)}</description>",
            f"    <location>{escape_xml(str(skill.path))}</location>",
            "  </skill>",
        ]
    lines.append("</available_skills>")
    return "\n".join(lines)


class SkillReadError(Exception):
    """The skill file named by ``/skill:name`` could not be read (reported as ``extension_error``)."""

    def __init__(self, skill: Skill, error: OSError) -> None:
        super().__init__(f"Failed to read skill {skill.path}: {error.strerror or error}")
        self.skill = skill


def find_skill_command(text: str, skills: Sequence[Skill]) -> tuple[Skill, str] | None:
    """(skill, args) when ``text`` is ``/skill:<known name> [args]``."""
    if not text.startswith("/skill:"):
        return None
    head, sep, rest = text.partition(" ")
    name = head[len("/skill:"):]
    skill = next((s for s in skills if s.name == name), None)
    return (skill, rest.strip() if sep else "") if skill else None


def expand_skill_command(text: str, skills: Sequence[Skill],
                         on_error: Callable[[SkillReadError], None] | None = None) -> str:
    """``/skill:name args`` -> the skill block (+ blank line + args); other text unchanged.

    An unreadable skill file leaves the text unchanged and is passed to ``on_error`` (pi reports it
    as an ``extension_error`` with event ``skill_expansion``).
    """
    found = find_skill_command(text, skills)
    if found is None:
        return text
    skill, args = found
    try:
        content = skill.path.read_text(encoding="utf-8")
    except OSError as exc:
        if on_error is not None:
            on_error(SkillReadError(skill, exc))
        return text
    body = strip_frontmatter(content).strip()
    block = (f'<skill name="{skill.name}" location="{skill.path}">\n'
             f"References are relative to {skill.base_dir}.\n\n{body}\n</skill>")
    return f"{block}\n\n{args}" if args else block
