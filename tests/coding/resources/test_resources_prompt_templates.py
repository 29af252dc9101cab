"""Prompt templates: loading/precedence and the whole argument grammar of pi's templates."""

from __future__ import annotations

from pathlib import Path

import pytest

from pi_coding_agent.coding.resources.prompt_templates import (
    PromptTemplate,
    expand_prompt_template,
    load_prompt_templates,
    parse_command_args,
    substitute_args,
)
from pi_coding_agent.coding.resources.settings import SettingsPath


@pytest.mark.parametrize(("text", "expected"), [
    ("", []),
    ("   ", []),
    ("a b  c", ["a", "b", "c"]),
    ("\ta\nb ", ["a", "b"]),
    ('"hello world" x', ["hello world", "x"]),
    ("'single quoted' y", ["single quoted", "y"]),
    ('"say \\"hi\\"" z', ['say "hi"', "z"]),
    ("'it\\'s'", ["it's"]),
    ("don't stop", ["don't", "stop"]),
    ('a"b c"', ['a"b', 'c"']),
    ('"" x', ["", "x"]),
    ("''", [""]),
    ('"unclosed quote here', ['"unclosed', "quote", "here"]),
    ('a "', ["a", '"']),
    ('"ab"cd', ["abcd"]),
    ('"a\\b"', ["a\\b"]),
])
def test_parse_command_args(text: str, expected: list[str]) -> None:
    assert parse_command_args(text) == expected


ARGS = ["one", "two", "three"]


@pytest.mark.parametrize(("body", "args", "expected"), [
    ("$1-$2-$3", ARGS, "one-two-three"),
    ("[$4]", ARGS, "[]"),
    ("[$0]", ARGS, "[]"),
    ("$10", [str(i) for i in range(1, 11)], "10"),
    ("$@|$ARGUMENTS", ARGS, "one two three|one two three"),
    ("${1:-d}/${4:-d}", ARGS, "one/d"),
    ("${2:-}", ["a", ""], ""),
    ("${2:-fallback}", ["a", ""], "fallback"),
    ("${@:-none}|${ARGUMENTS:-none}", [], "none|none"),
    ("${@:-none}", ARGS, "one two three"),
    ("${@:2}", ARGS, "two three"),
    ("${@:0}", ARGS, "one two three"),
    ("${@:2:1}", ARGS, "two"),
    ("${@:3:5}", ARGS, "three"),
    ("${@:9}", ARGS, ""),
    ("cost $5.00 $x ${x}", [], "cost .00 $x ${x}"),
    ("$1", ["$2"], "$2"),
    ("${1:-$2}", [], "$2"),
])
def test_substitute_args(body: str, args: list[str], expected: str) -> None:
    assert substitute_args(body, args) == expected


def template(name: str, body: str) -> PromptTemplate:
    return PromptTemplate(name=name, description="", argument_hint=None, body=body, path=Path(f"/t/{name}.md"))


def test_expand_prompt_template() -> None:
    templates = [template("review", "Review $1 (focus: ${2:-all}) args=[$@]")]
    assert expand_prompt_template('/review src/a.py "error handling"', templates) == (
        "Review src/a.py (focus: error handling) args=[src/a.py error handling]")
    assert expand_prompt_template("/review", templates) == "Review  (focus: all) args=[]"
    assert expand_prompt_template("/review\nmulti\nline", templates) == (
        "Review multi (focus: line) args=[multi line]")
    assert expand_prompt_template("/other x", templates) == "/other x"
    assert expand_prompt_template(" /review x", templates) == " /review x"
    assert expand_prompt_template("review x", templates) == "review x"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_loading_order_metadata_and_descriptions(tmp_path: Path) -> None:
    agent_dir, cwd = tmp_path / "agent", tmp_path / "proj"
    write(agent_dir / "prompts" / "review.md", "---\ndescription: Review code\nargument-hint: <file>\n---\nUser $1\n")
    write(agent_dir / "prompts" / "long.md", "\n\n" + "x" * 61 + "\nsecond line\n")
    write(agent_dir / "prompts" / "sub" / "nested.md", "not top level\n")
    write(agent_dir / "prompts" / "notes.txt", "not markdown\n")
    write(cwd / ".pi" / "prompts" / "review.md", "Project review $1\n")
    write(tmp_path / "shared" / "deep" / "setp.md", "settings prompt\n")
    cli = write(tmp_path / "cli" / "clip.md", "cli prompt\n")
    settings = [SettingsPath("../shared", agent_dir, "user")]

    trusted = load_prompt_templates(agent_dir, cwd, True, [str(cli)], settings)
    assert [(t.name, t.scope) for t in trusted] == [("review", "project"), ("setp", "user"), ("long", "user"),
                                                     ("clip", "temporary")]
    assert trusted[0].description == "Project review $1"
    assert trusted[0].source_info() == {"path": str(cwd / ".pi" / "prompts" / "review.md"), "source": "auto",
                                        "scope": "project", "origin": "top-level", "baseDir": str(cwd / ".pi")}
    assert trusted[1].source_info() == {"path": str(tmp_path / "shared" / "deep" / "setp.md"), "source": "local",
                                        "scope": "user", "origin": "top-level"}
    assert trusted[2].description == "x" * 60 + "..."
    assert trusted[3].source_info()["baseDir"] == str(tmp_path / "cli")

    untrusted = load_prompt_templates(agent_dir, cwd, False, [], settings)
    review = next(t for t in untrusted if t.name == "review")
    assert (review.description, review.argument_hint, review.body) == ("Review code", "<file>", "User $1")
    assert review.source_info()["baseDir"] == str(agent_dir)

    only_cli = load_prompt_templates(agent_dir, cwd, True, [str(cli)], settings, include_defaults=False)
    assert [t.name for t in only_cli] == ["clip"]
