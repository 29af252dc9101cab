"""grep, find and ls: formats, limits, notices and errors."""

from pathlib import Path
from typing import Any

import pytest

from pi_coding_agent.agent.tool import ToolError, ToolResult
from pi_coding_agent.ai.abort import AbortSignal
from pi_coding_agent.coding.tools.base import ToolEnv
from pi_coding_agent.coding.tools.builtin import create_builtin_tools


async def run(cwd: Path, name: str, **params: Any) -> ToolResult:
    tool = create_builtin_tools(ToolEnv(cwd=cwd))[name]
    return await tool.execute("t", params, AbortSignal(), lambda _: None)


def text_of(result: ToolResult) -> str:
    return result.content[0]["text"]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "src" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "src").mkdir(parents=True)
    (tmp_path / "src" / "a.ts").write_text("const one = 1;\nconst two = 2;\nconst three = 3;\n")
    (tmp_path / "src" / "sub" / "b.ts").write_text("let TWO = 'two';\n")
    (tmp_path / "pkg" / "src" / "c.ts").write_text("two\n")
    (tmp_path / ".hidden.md").write_text("two hidden\n")
    (tmp_path / "README.md").write_text("nothing\n")
    (tmp_path / ".gitignore").write_text("ignored.txt\n")
    (tmp_path / "ignored.txt").write_text("two\n")
    (tmp_path / ".git").mkdir()
    return tmp_path


async def test_grep_format_hidden_and_gitignore(tree: Path) -> None:
    lines = sorted(text_of(await run(tree, "grep", pattern="two")).split("\n"))
    assert lines == [".hidden.md:1: two hidden", "pkg/src/c.ts:1: two", "src/a.ts:2: const two = 2;", "src/sub/b.ts:1: let TWO = 'two';"]


async def test_grep_options_context_and_single_file(tree: Path) -> None:
    result = await run(tree, "grep", pattern="TWO", path="src/a.ts", ignoreCase=True, context=1)
    assert text_of(result) == "a.ts-1- const one = 1;\na.ts:2: const two = 2;\na.ts-3- const three = 3;"
    literal = await run(tree, "grep", pattern="t.o", literal=True)
    assert text_of(literal) == "No matches found"
    globbed = await run(tree, "grep", pattern="two", glob="src/*.ts")
    assert text_of(globbed) == "src/a.ts:2: const two = 2;"


async def test_grep_limit_notice_and_long_lines(tmp_path: Path) -> None:
    (tmp_path / "many.txt").write_text("".join(f"hit {i}\n" for i in range(10)) + "hit " + "y" * 600 + "\n")
    result = await run(tmp_path, "grep", pattern="hit", limit=3)
    assert text_of(result) == (
        "many.txt:1: hit 0\nmany.txt:2: hit 1\nmany.txt:3: hit 2\n\n"
        "[3 matches limit reached. Use limit=6 for more, or refine pattern]"
    )
    assert result.details == {"matchLimitReached": 3}
    long = await run(tmp_path, "grep", pattern="y{600}")
    assert text_of(long).endswith("... [truncated]\n\n[Some lines truncated to 500 chars. Use read tool to see full lines]")
    assert long.details == {"linesTruncated": True}


async def test_grep_errors(tmp_path: Path) -> None:
    with pytest.raises(ToolError) as info:
        await run(tmp_path, "grep", pattern="x", path="missing")
    assert str(info.value) == f"Path not found: {tmp_path / 'missing'}"
    (tmp_path / "f").write_text("x")
    with pytest.raises(ToolError, match="regex parse error"):
        await run(tmp_path, "grep", pattern="(")


async def test_find_name_and_path_patterns(tree: Path) -> None:
    assert text_of(await run(tree, "find", pattern="*.ts")) == "pkg/src/c.ts\nsrc/a.ts\nsrc/sub/b.ts"
    assert text_of(await run(tree, "find", pattern="src/*.ts")) == "src/a.ts"
    assert text_of(await run(tree, "find", pattern="**/src/*.ts")) == "pkg/src/c.ts\nsrc/a.ts"
    assert text_of(await run(tree, "find", pattern="readme*")) == "README.md"  # all-lowercase: case-insensitive
    assert text_of(await run(tree, "find", pattern="Readme*")) == "No files found matching pattern"
    assert text_of(await run(tree, "find", pattern="ignored.txt")) == "No files found matching pattern"
    assert text_of(await run(tree, "find", pattern="*.{md,ts}", path="src")) == "a.ts\nsub/b.ts"
    assert text_of(await run(tree, "find", pattern="src/**")) == "src/a.ts\nsrc/sub/\nsrc/sub/b.ts"
    assert text_of(await run(tree, "find", pattern="[.]hidden*")) == ".hidden.md"


async def test_find_lists_matching_directories_like_fd(tree: Path) -> None:
    assert text_of(await run(tree, "find", pattern="sub")) == "src/sub/"
    assert text_of(await run(tree, "find", pattern="*src*")) == "pkg/src/\nsrc/"
    assert text_of(await run(tree, "find", pattern="pkg/*")) == "pkg/src/"


async def test_find_limit_notice(tree: Path) -> None:
    result = await run(tree, "find", pattern="*.ts", limit=2)
    assert text_of(result) == "pkg/src/c.ts\nsrc/a.ts\n\n[2 results limit reached. Use limit=4 for more, or refine pattern]"
    assert result.details == {"resultLimitReached": 2}


async def test_ls_sorting_suffixes_and_limit(tree: Path) -> None:
    assert text_of(await run(tree, "ls")) == ".git/\n.gitignore\n.hidden.md\nignored.txt\npkg/\nREADME.md\nsrc/"
    limited = await run(tree, "ls", limit=2)
    assert text_of(limited) == ".git/\n.gitignore\n\n[2 entries limit reached. Use limit=4 for more]"
    assert limited.details == {"entryLimitReached": 2}


async def test_ls_errors_and_empty(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "file").write_text("x")
    assert text_of(await run(tmp_path, "ls", path="empty")) == "(empty directory)"
    with pytest.raises(ToolError, match=f"^Not a directory: {tmp_path / 'file'}$"):
        await run(tmp_path, "ls", path="file")
    with pytest.raises(ToolError, match=f"^Path not found: {tmp_path / 'nope'}$"):
        await run(tmp_path, "ls", path="nope")


async def test_ls_byte_cap(tmp_path: Path) -> None:
    for i in range(400):
        (tmp_path / f"{i:03d}{'n' * 200}").write_text("")
    result = await run(tmp_path, "ls")
    assert text_of(result).endswith("\n\n[50.0KB limit reached]")
    assert result.details["truncation"]["truncatedBy"] == "bytes"
