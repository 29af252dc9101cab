"""edit and write: matching, errors, CRLF/BOM round trips, all-or-nothing, serialisation."""

import asyncio
from pathlib import Path
from typing import Any

import pytest

from pi_coding_agent.agent.tool import ToolError, ToolResult
from pi_coding_agent.ai.abort import AbortSignal
from pi_coding_agent.coding.tools.base import ToolEnv
from pi_coding_agent.coding.tools.builtin import create_builtin_tools


async def run(cwd: Path, name: str, **params: Any) -> ToolResult:
    tool = create_builtin_tools(ToolEnv(cwd=cwd))[name]
    return await tool.execute("t", tool.prepare_arguments(params), AbortSignal(), lambda _: None)


def edit(old: str, new: str) -> dict[str, str]:
    return {"oldText": old, "newText": new}


async def test_single_edit_success_and_details(tmp_path: Path) -> None:
    target = tmp_path / "f.txt"
    target.write_text("".join(f"line {i}\n" for i in range(1, 21)))
    result = await run(tmp_path, "edit", path="f.txt", edits=[edit("line 5\n", "LINE five\nextra\n")])
    assert result.content == [{"type": "text", "text": "Successfully replaced 1 block(s) in f.txt."}]
    assert "LINE five\nextra\nline 6" in target.read_text()
    details = result.details
    assert details["firstChangedLine"] == 5
    assert details["patch"].startswith("--- f.txt\n+++ f.txt\n@@ -1,9 +1,10 @@\n line 1\n")
    assert "- 5 line 5\n+ 5 LINE five\n+ 6 extra\n  6 line 6" in details["diff"]


async def test_patch_marks_missing_final_newline(tmp_path: Path) -> None:
    (tmp_path / "g.txt").write_text("a\nb\nc")
    result = await run(tmp_path, "edit", path="g.txt", edits=[edit("c", "C")])
    assert result.details["patch"] == (
        "--- g.txt\n+++ g.txt\n@@ -1,3 +1,3 @@\n a\n b\n-c\n\\ No newline at end of file\n+C\n"
        "\\ No newline at end of file\n"
    )
    assert result.details["diff"] == " 1 a\n 2 b\n-3 c\n+3 C"


async def test_crlf_and_bom_are_preserved(tmp_path: Path) -> None:
    target = tmp_path / "w.txt"
    target.write_bytes(b"\xef\xbb\xbfone\r\ntwo\r\nthree\r\n")
    await run(tmp_path, "edit", path="w.txt", edits=[edit("two\n", "2\n2b\n")])
    assert target.read_bytes() == b"\xef\xbb\xbfone\r\n2\r\n2b\r\nthree\r\n"


async def test_multi_edit_failure_leaves_file_untouched(tmp_path: Path) -> None:
    target = tmp_path / "m.txt"
    target.write_text("alpha\nbeta\n")
    with pytest.raises(ToolError) as info:
        await run(tmp_path, "edit", path="m.txt", edits=[edit("alpha", "A"), edit("gamma", "G")])
    assert str(info.value) == (
        "Could not find edits[1] in m.txt. The oldText must match exactly including all whitespace and newlines."
    )
    assert target.read_text() == "alpha\nbeta\n"


@pytest.mark.parametrize(
    ("content", "edits", "message"),
    [
        ("x", [edit("", "y")], "oldText must not be empty in f.txt."),
        ("x", [edit("x", "y"), edit("", "z")], "edits[1].oldText must not be empty in f.txt."),
        ("x", [edit("nope", "y")],
         "Could not find the exact text in f.txt. The old text must match exactly including all whitespace and newlines."),
        ("dup dup", [edit("dup", "y")],
         "Found 2 occurrences of the text in f.txt. The text must be unique. Please provide more context to make it unique."),
        ("a dup dup", [edit("a", "b"), edit("dup", "y")],
         "Found 2 occurrences of edits[1] in f.txt. Each oldText must be unique. Please provide more context to make it unique."),
        ("abcdef", [edit("bcd", "1"), edit("cde", "2")],
         "edits[0] and edits[1] overlap in f.txt. Merge them into one edit or target disjoint regions."),
        ("same", [edit("same", "same")],
         "No changes made to f.txt. The replacement produced identical content. This might indicate an issue "
         "with special characters or the text not existing as expected."),
        ("a b", [edit("a", "a"), edit("b", "b")], "No changes made to f.txt. The replacements produced identical content."),
    ],
)
async def test_error_messages(tmp_path: Path, content: str, edits: list[dict[str, str]], message: str) -> None:
    (tmp_path / "f.txt").write_text(content)
    with pytest.raises(ToolError) as info:
        await run(tmp_path, "edit", path="f.txt", edits=edits)
    assert str(info.value) == message
    assert (tmp_path / "f.txt").read_text() == content


async def test_missing_file_and_empty_edits(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match=r"^Could not edit file: no\.txt\. Error code: ENOENT\.$"):
        await run(tmp_path, "edit", path="no.txt", edits=[edit("a", "b")])
    with pytest.raises(ToolError, match=r"^Edit tool input is invalid\. edits must contain at least one replacement\.$"):
        await run(tmp_path, "edit", path="no.txt", edits=[])


async def test_fuzzy_match_rewrites_only_touched_lines(tmp_path: Path) -> None:
    target = tmp_path / "q.txt"
    target.write_text("keep “curly”  \nsay “hi”\u00a0there   \nend\n")
    await run(tmp_path, "edit", path="q.txt", edits=[edit('say "hi" there', "say hello")])
    assert target.read_text() == "keep “curly”  \nsay hello\nend\n"


async def test_prepare_arguments_repairs(tmp_path: Path) -> None:
    tool = create_builtin_tools(ToolEnv(cwd=tmp_path))["edit"]
    assert tool.prepare_arguments({"path": "p", "edits": '[{"oldText":"a","newText":"b"}]'})["edits"] == [edit("a", "b")]
    assert tool.prepare_arguments({"path": "p", "edits": edit("a", "b")})["edits"] == [edit("a", "b")]
    legacy = tool.prepare_arguments({"path": "p", "oldText": "a", "newText": "b"})
    assert legacy == {"path": "p", "edits": [edit("a", "b")]}


async def test_write_creates_parents_and_reports_path_as_given(tmp_path: Path) -> None:
    result = await run(tmp_path, "write", path="deep/er/new.txt", content="héllo\n")
    assert result.content == [{"type": "text", "text": "Successfully wrote to deep/er/new.txt"}]
    assert result.details is None
    assert (tmp_path / "deep/er/new.txt").read_bytes() == "héllo\n".encode()


async def test_writes_and_edits_on_one_file_are_serialised(tmp_path: Path) -> None:
    (tmp_path / "c.txt").write_text("0")
    tools = create_builtin_tools(ToolEnv(cwd=tmp_path))

    async def bump(i: int) -> None:
        await tools["edit"].execute("t", {"path": "c.txt", "edits": [edit(str(i), str(i + 1))]}, AbortSignal(), lambda _: None)

    # Each edit expects the previous one's result: only serialised execution in order succeeds.
    await asyncio.gather(*(bump(i) for i in range(20)))
    assert (tmp_path / "c.txt").read_text() == "20"


# ---- large files: the new text is written piece by piece, the fuzzy copy is built in blocks ----


@pytest.fixture
def tiny_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pieces and fuzzy blocks of a few characters, so small files cross every block boundary."""
    from pi_coding_agent.coding.tools import edit_diff

    monkeypatch.setattr(edit_diff, "_PART_CHARS", 3)
    monkeypatch.setattr(edit_diff, "_FUZZY_BLOCK_CHARS", 4)


@pytest.mark.usefixtures("tiny_blocks")
async def test_crlf_file_written_in_pieces_keeps_every_line_ending(tmp_path: Path) -> None:
    target = tmp_path / "c.txt"
    target.write_bytes(b"\xef\xbb\xbfab\r\ncd\r\nef\r\r\ngh\r\nij\r\n")
    result = await run(tmp_path, "edit", path="c.txt", edits=[edit("cd\n", "CD\nC2\n"), edit("ij", "IJ")])
    assert target.read_bytes() == b"\xef\xbb\xbfab\r\nCD\r\nC2\r\nef\r\r\ngh\r\nIJ\r\n"
    assert result.details["firstChangedLine"] == 2


@pytest.mark.usefixtures("tiny_blocks")
async def test_fuzzy_match_across_blocks(tmp_path: Path) -> None:
    target = tmp_path / "q.txt"
    target.write_text("first line  \nsay \u201chello\u201d \t\nlast\n")
    await run(tmp_path, "edit", path="q.txt", edits=[edit('say "hello"', "say hi")])
    assert target.read_text() == "first line  \nsay hi\nlast\n"


async def test_offsets_that_shift_and_shift_back_are_still_no_change(tmp_path: Path) -> None:
    (tmp_path / "n.txt").write_text("xaab\n")
    with pytest.raises(ToolError) as info:
        await run(tmp_path, "edit", path="n.txt", edits=[edit("xa", "x"), edit("ab", "aab")])
    assert str(info.value) == "No changes made to n.txt. The replacements produced identical content."


async def test_far_apart_edits_in_a_large_file(tmp_path: Path) -> None:
    """Two windows of diff, line numbers counted without the new text; only the touched lines change."""
    target = tmp_path / "big.txt"
    lines = [f"row {i}\n" for i in range(200_000)]
    target.write_text("".join(lines))
    result = await run(tmp_path, "edit", path="big.txt", edits=[edit("row 10\n", "ten\n10b\n"), edit("row 199998\n", "")])
    expected = [*lines[:10], "ten\n", "10b\n", *lines[11:199998], lines[199999]]
    assert target.read_text() == "".join(expected)
    diff = result.details["diff"]
    assert "-    11 row 10\n+    11 ten\n+    12 10b\n     12 row 11" in diff  # context: old numbers
    assert "-199999 row 199998\n 200000 row 199999" in diff
    assert result.details["patch"].count("@@ -") == 2


def test_text_already_normal_is_not_copied_for_fuzzy_matching() -> None:
    from pi_coding_agent.coding.tools.edit_diff import normalize_for_fuzzy_match

    text = "plain ascii\nno trailing blanks\n" * 1000
    assert normalize_for_fuzzy_match(text) is text
    assert normalize_for_fuzzy_match("a \nb") == "a\nb"
    assert normalize_for_fuzzy_match("tab\t") == "tab"
