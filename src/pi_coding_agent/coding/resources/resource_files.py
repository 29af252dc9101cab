"""Which files are skills and prompt templates: the candidates of each, in pi's precedence order,
found by listing directories without reading a file.

A start-up needs only these lists; the modules that read the files (``skills``, ``prompt_templates``:
frontmatter, validation, expansion) are imported when a list is not empty.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.resources import resource_paths as rp
from pi_coding_agent.coding.resources.settings import PROJECT_DIR, SettingsPath

SKILL_FILE = "SKILL.md"


def source_info(path: Path, source: str, scope: str, base_dir: Path | None,
                origin: str = "top-level") -> JsonObject:
    """A skill's or template's ``sourceInfo`` object, as get_commands shows it."""
    info: JsonObject = {"path": str(path), "source": source, "scope": scope, "origin": origin}
    if base_dir is not None:
        info["baseDir"] = str(base_dir)
    return info


# ---------------------------------------------------------------------- skills


def skill_candidates(agent_dir: Path, cwd: Path, trusted: bool, extra_paths: Sequence[str],
                     settings_paths: Sequence[SettingsPath | str], include_defaults: bool,
                     packages: Sequence[rp.ResourceFile] = ()) -> list[rp.ResourceFile]:
    """Every candidate skill file in precedence order (see ``resource_paths``); package skills come
    after the user's own, as in pi."""
    cli = rp.cli_files(extra_paths, cwd, _skill_cli_path, lambda _root, file: file.parent)
    if not include_defaults:
        return cli
    cwd = cwd.absolute()
    home_skills = Path(os.path.expanduser("~")) / ".agents" / "skills"
    project_dirs: list[tuple[Path, Path]] = []
    if trusted:
        project_dirs.append((cwd / PROJECT_DIR / "skills", cwd / PROJECT_DIR))
        project_dirs += [(d, d.parent) for d in ancestor_agents_skill_dirs(cwd) if d != home_skills]
    user_dirs = [(agent_dir / "skills", agent_dir), (home_skills, home_skills.parent)]
    return _in_precedence(settings_paths, agent_dir, collect_pi_mode, trusted,
                          (_auto(project_dirs, "project", settings_paths, agent_dir),
                           _auto(user_dirs, "user", settings_paths, agent_dir)), [*packages, *cli])


def _auto(dirs: list[tuple[Path, Path]], scope: str, settings_paths: Sequence[SettingsPath | str],
          agent_dir: Path) -> list[rp.ResourceFile]:
    """Auto-discovered skills; ``.agents`` directories use the nested-file rule of that layout."""
    out: list[rp.ResourceFile] = []
    for directory, base in dirs:
        collect = collect_agents_mode if directory.parent.name == ".agents" else collect_pi_mode
        out += rp.auto_files([(directory, base)], collect, scope, settings_paths, agent_dir)
    return out


def ancestor_agents_skill_dirs(cwd: Path) -> list[Path]:
    """``.agents/skills`` of the cwd and its ancestors, stopping at the git repository root."""
    repo_root = next((d for d in (cwd, *cwd.parents) if (d / ".git").exists()), None)
    dirs: list[Path] = []
    for directory in (cwd, *cwd.parents):
        dirs.append(directory / ".agents" / "skills")
        if directory == repo_root:
            break
    return dirs


def collect_pi_mode(root: Path) -> list[Path]:
    """``.pi``/agent-dir layout: loose ``.md`` files at the top level, ``SKILL.md`` dirs below."""
    return _collect(root, root, top_level_md=True)


def collect_agents_mode(root: Path) -> list[Path]:
    """``.agents/skills`` layout: ``SKILL.md`` dirs, and loose ``.md`` files only below the top level."""
    return _collect(root, root, top_level_md=False)


def _collect(directory: Path, root: Path, top_level_md: bool) -> list[Path]:
    """A dir with a SKILL.md is one skill (not descended further); hidden dirs and node_modules skipped."""
    entries = rp.sorted_entries(directory)
    skill_file = directory / SKILL_FILE
    if any(e.name == SKILL_FILE for e in entries) and skill_file.is_file():
        return [skill_file]
    found: list[Path] = []
    at_root = directory == root
    for entry in entries:
        if entry.name.startswith(".") or entry.name == "node_modules":
            continue
        is_dir, is_file = rp.entry_kind(entry)
        if is_dir:
            found += _collect(Path(entry.path), root, top_level_md)
        elif is_file and entry.name.endswith(".md") and at_root == top_level_md:
            found.append(Path(entry.path))
    return found


def _skill_cli_path(path: Path) -> list[Path]:
    if path.is_dir():
        return collect_pi_mode(path)
    return [path] if path.is_file() else []


# ---------------------------------------------------------------------- prompt templates


def template_candidates(agent_dir: Path, cwd: Path, trusted: bool, extra_paths: Sequence[str],
                        settings_paths: Sequence[SettingsPath | str], include_defaults: bool,
                        packages: Sequence[rp.ResourceFile] = ()) -> list[rp.ResourceFile]:
    """Every candidate prompt template file in precedence order."""
    cli = rp.cli_files(extra_paths, cwd, _template_cli_path, lambda root, _file: root if root.is_dir() else root.parent)
    if not include_defaults:
        return cli
    return _scoped_candidates("prompts", agent_dir, cwd, trusted, settings_paths,
                              (collect_nested_markdown, top_level_markdown), [*packages, *cli])


def theme_candidates(agent_dir: Path, cwd: Path, trusted: bool,
                     settings_paths: Sequence[SettingsPath | str]) -> list[rp.ResourceFile]:
    """Every theme file the settings leave on: their ``themes`` entries and the ``themes`` folders,
    project first, as ``pi config`` lists them."""
    return _scoped_candidates("themes", agent_dir, cwd, trusted, settings_paths, (top_level_json, top_level_json), [])


def _scoped_candidates(folder: str, agent_dir: Path, cwd: Path, trusted: bool,
                       settings_paths: Sequence[SettingsPath | str], collect: tuple[rp.Collector, rp.Collector],
                       tail: Sequence[rp.ResourceFile]) -> list[rp.ResourceFile]:
    """Settings entries and ``<base>/<folder>`` of the project (trusted) then the user; ``tail`` after them."""
    of_entry, of_folder = collect
    project_dirs = [(cwd / PROJECT_DIR / folder, cwd / PROJECT_DIR)] if trusted else []
    return _in_precedence(settings_paths, agent_dir, of_entry, trusted,
                          (rp.auto_files(project_dirs, of_folder, "project", settings_paths, agent_dir),
                           rp.auto_files([(agent_dir / folder, agent_dir)], of_folder, "user", settings_paths,
                                         agent_dir)), tail)


def _in_precedence(settings_paths: Sequence[SettingsPath | str], agent_dir: Path, of_entry: rp.Collector,
                   trusted: bool, auto: tuple[list[rp.ResourceFile], list[rp.ResourceFile]],
                   tail: Sequence[rp.ResourceFile]) -> list[rp.ResourceFile]:
    """pi's order: the project's entries, its folders' files (``auto``: project's, user's), the user's
    entries, the user's folders' files, ``tail``; each scope's filters applied, and a user file the
    trusted project's filters switch off left out. Each scope's entries are walked once."""
    project, masked = rp.scope_files(settings_paths, agent_dir, of_entry, "project")
    user = rp.settings_files(settings_paths, agent_dir, of_entry, "user")
    return rp.without_overridden([*project, *auto[0], *user, *auto[1], *tail], masked if trusted else set())


def top_level_json(directory: Path) -> list[Path]:
    """``*.json`` files directly in ``directory`` (hidden files skipped): a folder of themes."""
    return [Path(e.path) for e in rp.sorted_entries(directory)
            if e.name.endswith(".json") and not e.name.startswith(".") and rp.entry_kind(e)[1]]


def top_level_markdown(directory: Path) -> list[Path]:
    """``*.md`` files directly in ``directory`` (hidden files skipped)."""
    out = []
    for entry in rp.sorted_entries(directory):
        if entry.name.startswith(".") or not entry.name.endswith(".md"):
            continue
        if rp.entry_kind(entry)[1]:
            out.append(Path(entry.path))
    return out


def collect_nested_markdown(directory: Path) -> list[Path]:
    """``*.md`` files anywhere below ``directory`` (settings entries may name a whole tree)."""
    out: list[Path] = []
    for entry in rp.sorted_entries(directory):
        if entry.name.startswith(".") or entry.name == "node_modules":
            continue
        is_dir, is_file = rp.entry_kind(entry)
        if is_dir:
            out += collect_nested_markdown(Path(entry.path))
        elif is_file and entry.name.endswith(".md"):
            out.append(Path(entry.path))
    return out


def _template_cli_path(path: Path) -> list[Path]:
    if path.is_dir():
        return top_level_markdown(path)
    return [path] if path.is_file() and path.name.endswith(".md") else []
