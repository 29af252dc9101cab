"""System prompt sections (compared with what pi 1.6.0 writes) and transcript replay/patches."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pi_coding_agent.coding.resources.context_files import load_context_files
from pi_coding_agent.coding.resources.prompt_files import resolve_append_prompts, resolve_custom_prompt
from pi_coding_agent.coding.resources.skills import Skill, load_skills
from pi_coding_agent.coding.resources.system_prompt import (
    PromptInputs,
    SystemState,
    build_sections,
    render_system_prompt,
)

# Tool entries as pi's built-in tools declare them (snippet, guidelines).
PI_TOOLS = [
    ("read", "Read file contents", ["Use read to examine files instead of cat or sed."]),
    ("bash", "Execute bash commands (ls, grep, find, etc.)",
     ["You can inspect PI_* environment variables for current model and session details."]),
    ("edit", "Make precise file edits with exact text replacement, including multiple disjoint edits in one call",
     ["Use edit for targeted changes. Batch changes to one file in a single call.",
      "Each edits[].oldText must exactly and uniquely match the original file. Keep matches short and "
      "non-overlapping; merge nearby changes without including large unchanged regions."]),
    ("write", "Create or overwrite files", ["Use write only for new files or complete rewrites."]),
]

# The `sections` of the system message pi 1.6.0 wrote for the layout built by `reference_layout`
# (captured from a real session file; {root} stands for the layout's root directory). `preamble` and
# `docs` are ours by design and are compared separately.
REFERENCE_SECTIONS = {
    "tools": "<tools>\n- read: Read file contents\n- bash: Execute bash commands (ls, grep, find, etc.)\n- edit: Make precise file edits with exact text replacement, including multiple disjoint edits in one call\n- write: Create or overwrite files\n\nAdditional tools may be available.\n</tools>",
    "rules": "<rules>\n- Use bash for file operations like ls, rg, find\n- Use read to examine files instead of cat or sed.\n- You can inspect PI_* environment variables for current model and session details.\n- Use edit for targeted changes. Batch changes to one file in a single call.\n- Each edits[].oldText must exactly and uniquely match the original file. Keep matches short and non-overlapping; merge nearby changes without including large unchanged regions.\n- Use write only for new files or complete rewrites.\n- Be concise in your responses\n- Show file paths clearly when working with files\n</rules>",
    "project_context": '<project_context>\nProject-specific instructions and guidelines:\n\n<project_instructions path="{root}/home/.pi/agent/AGENTS.md">\nglobal agents content\n\n</project_instructions>\n\n<project_instructions path="{root}/proj/AGENTS.md">\nproj root agents\n\n</project_instructions>\n\n<project_instructions path="{root}/proj/sub/CLAUDE.md">\nproj claude\n\n</project_instructions>\n\n<project_instructions path="{root}/proj/sub/deep/AGENTS.override.md">\noverride\n\n</project_instructions>\n</project_context>',
    "skills": "<skills>\nThe following skills provide specialized instructions for specific tasks.\nUse the read tool to load a skill's file when the task matches its description.\nResolve relative paths against the skill's directory (parent of SKILL.md). Use absolute paths in tool calls.\n\n<available_skills>\n  <skill>\n    <name>my-skill</name>\n    <description>Does &lt;things&gt; &amp; stuff</description>\n    <location>{root}/home/.pi/agent/skills/my-skill/SKILL.md</location>\n  </skill>\n</available_skills>\n</skills>",
    "cwd": "<cwd>\n{root}/proj/sub/deep\n</cwd>",
}
REFERENCE_ORDER = ["preamble", "tools", "rules", "docs", "project_context", "skills", "cwd"]


def put(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def reference_layout(root: Path) -> tuple[Path, Path]:
    agent_dir = root / "home" / ".pi" / "agent"
    put(agent_dir / "AGENTS.md", "global agents content\n")
    put(agent_dir / "skills" / "my-skill" / "SKILL.md",
        "---\nname: my-skill\ndescription: Does <things> & stuff\n---\n\n# Body\nHello skill\n")
    put(agent_dir / "skills" / "hidden-skill" / "SKILL.md",
        "---\nname: hidden-skill\ndescription: hidden one\ndisable-model-invocation: true\n---\nHidden body\n")
    put(root / "proj" / "AGENTS.md", "proj root agents\n")
    put(root / "proj" / "sub" / "CLAUDE.md", "proj claude\n")
    put(root / "proj" / "sub" / "deep" / "AGENTS.override.md", "override\n")
    put(root / "proj" / "sub" / "deep" / "AGENTS.md", "deep agents\n")
    return agent_dir, root / "proj" / "sub" / "deep"


def inputs(cwd: Path, **overrides: Any) -> PromptInputs:
    values: dict[str, Any] = {"tools": PI_TOOLS, "custom_prompt": None, "append_texts": [], "context_files": [],
                              "skills": [], "cwd": cwd}
    values.update(overrides)
    return PromptInputs(**values)


def test_sections_match_the_reference_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    agent_dir, cwd = reference_layout(tmp_path)
    skills, _ = load_skills(agent_dir, cwd, True, [], [])
    sections = build_sections(inputs(cwd, context_files=load_context_files(agent_dir, cwd), skills=skills))
    assert list(sections) == REFERENCE_ORDER
    for name, text in REFERENCE_SECTIONS.items():
        assert sections[name] == text.replace("{root}", str(tmp_path)), name
    assert sections["preamble"].startswith("You are a coding assistant")
    assert sections["docs"].startswith("<docs>\n") and sections["docs"].endswith("\n</docs>")
    assert render_system_prompt(sections) == "\n\n".join(sections[n] for n in REFERENCE_ORDER)


def test_custom_prompt_replaces_preamble_tools_rules_and_docs(tmp_path: Path) -> None:
    sections = build_sections(inputs(tmp_path, custom_prompt="Be a pirate.", append_texts=["Extra one", "", "Two"],
                                     extra_sections={"mcp_servers": "server list", "empty": ""}))
    assert sections == {
        "preamble": "Be a pirate.",
        "addendum": "<addendum>\nExtra one\n\nTwo\n</addendum>",
        "cwd": f"<cwd>\n{tmp_path}\n</cwd>",
        "mcp_servers": "<mcp_servers>\nserver list\n</mcp_servers>",
    }


@pytest.mark.parametrize("name", ["preamble", "Bad", "1x", "a b"])
def test_invalid_extension_section_names(tmp_path: Path, name: str) -> None:
    with pytest.raises(ValueError, match=f"Invalid system prompt section name: {name}"):
        build_sections(inputs(tmp_path, extra_sections={name: "x"}))


def rules_of(tmp_path: Path, tools: list[tuple[str, str | None, list[str]]], **kw: Any) -> list[str]:
    text = build_sections(inputs(tmp_path, tools=tools, **kw))["rules"]
    return text.removeprefix("<rules>\n").removesuffix("\n</rules>").split("\n")


def test_rules_variants_and_deduplication(tmp_path: Path) -> None:
    closing = ["- Be concise in your responses", "- Show file paths clearly when working with files"]
    assert rules_of(tmp_path, []) == closing
    assert rules_of(tmp_path, [("powershell", None, [])])[0] == (
        "- Use PowerShell for file operations like listing, searching, and finding files")
    assert rules_of(tmp_path, [("bash", None, []), ("powershell", None, [])])[0] == (
        "- Use bash or PowerShell for file operations like listing, searching, and finding files")
    assert rules_of(tmp_path, [("bash", None, []), ("grep", None, [])]) == closing
    assert rules_of(tmp_path, [("x", None, ["  Same rule ", "Same rule"]), ("y", None, ["Same rule"])],
                    prompt_guidelines=["Be concise in your responses", "Ext rule"]) == [
        "- Same rule", closing[0], "- Ext rule", closing[1]]


def test_tools_section_without_snippets(tmp_path: Path) -> None:
    sections = build_sections(inputs(tmp_path, tools=[("custom", None, [])]))
    assert sections["tools"] == "<tools>\n(none)\n\nAdditional tools may be available.\n</tools>"


def skill(tmp_path: Path) -> Skill:
    path = tmp_path / "s" / "SKILL.md"
    return Skill(name="s", description="d", path=path, base_dir=path.parent)


def test_skills_section_needs_a_reader(tmp_path: Path) -> None:
    skills = [skill(tmp_path)]
    assert "skills" not in build_sections(inputs(tmp_path, tools=[("edit", "e", [])], skills=skills))
    via_bash = build_sections(inputs(tmp_path, tools=[("bash", "b", [])], skills=skills))["skills"]
    assert "Use bash to load a skill's file" in via_bash
    hidden = build_sections(inputs(tmp_path, tools=[("edit", "e", [])], skills=skills, hidden_tools=["read"]))
    assert "\nLoad a skill's file when the task matches its description." in hidden["skills"]


def test_cwd_backslashes_become_slashes(tmp_path: Path) -> None:
    assert build_sections(inputs(Path("C:\\Users\\me\\proj")))["cwd"] == "<cwd>\nC:/Users/me/proj\n</cwd>"


def test_custom_and_append_prompt_resolution(tmp_path: Path) -> None:
    agent_dir, cwd = tmp_path / "agent", tmp_path / "proj"
    assert resolve_custom_prompt(None, agent_dir, cwd, True) is None
    put(agent_dir / "SYSTEM.md", "global system")
    put(cwd / ".pi" / "SYSTEM.md", "\ufeffproject system")
    assert resolve_custom_prompt(None, agent_dir, cwd, True) == "project system"
    assert resolve_custom_prompt(None, agent_dir, cwd, False) == "global system"
    assert resolve_custom_prompt("inline text", agent_dir, cwd, True) == "inline text"
    assert resolve_custom_prompt(str(agent_dir / "SYSTEM.md"), agent_dir, cwd, False) == "global system"

    assert resolve_append_prompts([], agent_dir, cwd, True) == []
    put(agent_dir / "APPEND_SYSTEM.md", "global append")
    put(cwd / ".pi" / "APPEND_SYSTEM.md", "project append")
    assert resolve_append_prompts([], agent_dir, cwd, True) == ["project append"]
    assert resolve_append_prompts([], agent_dir, cwd, False) == ["global append"]
    assert resolve_append_prompts(["a", str(agent_dir / "APPEND_SYSTEM.md")], agent_dir, cwd, True) == [
        "a", "global append"]


# ---------------------------------------------------------------------- transcript state

TOOL_A = {"name": "a", "description": "A", "parameters": {"type": "object", "properties": {}}}
TOOL_B = {"name": "b", "description": "B", "parameters": {"type": "object", "properties": {}}}


def test_first_patch_is_the_full_message_with_pi_key_order() -> None:
    sections = {"preamble": "P", "cwd": "<cwd>\n/x\n</cwd>"}
    message = SystemState().patch_to(sections, [TOOL_A, TOOL_B])
    assert message is not None
    assert list(message) == ["role", "content", "sections", "timestamp", "toolsAdded"]
    assert (message["role"], message["content"], message["sections"], message["toolsAdded"]) == (
        "system", "", sections, [TOOL_A, TOOL_B])
    assert isinstance(message["timestamp"], int)
    state = SystemState.replay([{"role": "user", "content": "hi"}, message])
    assert state.patch_to(sections, [TOOL_A, TOOL_B]) is None
    assert state.render() == "P\n\n<cwd>\n/x\n</cwd>"


def test_patches_carry_only_the_delta_and_replay_to_the_target() -> None:
    first = {"role": "system", "content": "", "sections": {"preamble": "P", "skills": "S", "cwd": "C"},
             "timestamp": 1, "toolsAdded": [TOOL_A, TOOL_B]}
    state = SystemState.replay([first])
    changed_b = {**TOOL_B, "description": "B2"}
    target_sections = {"preamble": "P", "cwd": "C2", "ext": "E"}
    patch = state.patch_to(target_sections, [changed_b, {"name": "c", "description": "", "parameters": {}}])
    assert patch is not None
    assert patch["sections"] == {"cwd": "C2", "ext": "E", "skills": None}
    assert patch["toolsAdded"] == [changed_b, {"name": "c", "description": "", "parameters": {}}]
    assert patch["toolsRemoved"] == [{"name": "a"}, {"name": "b"}]
    replayed = SystemState.replay([first, {"role": "assistant", "content": []}, patch])
    assert replayed.sections == target_sections
    assert list(replayed.tools) == ["b", "c"] and replayed.tools["b"] == changed_b
    tools_only = replayed.patch_to(target_sections, [changed_b])
    assert tools_only is not None and "sections" not in tools_only and tools_only["toolsRemoved"] == [{"name": "c"}]


def test_forced_content_is_rendered_before_sections() -> None:
    state = SystemState.replay([{"role": "system", "content": "Forced.", "timestamp": 1},
                                {"role": "system", "content": "", "sections": {"cwd": "C"}, "timestamp": 2}])
    assert state.render() == "Forced.\n\nC"
