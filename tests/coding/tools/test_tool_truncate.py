"""Truncation helpers: caps, metadata and size formatting."""

from pi_coding_agent.coding.tools.truncate import (
    format_size,
    truncate_head,
    truncate_line,
    truncate_tail,
)


def test_format_size_units() -> None:
    assert format_size(1023) == "1023B"
    assert format_size(1024) == "1.0KB"
    assert format_size(51200) == "50.0KB"
    assert format_size(1024 * 1024 * 3 // 2) == "1.5MB"


def test_head_not_truncated_counts_lines_without_trailing_newline() -> None:
    result = truncate_head("a\nb\n")
    assert result["truncated"] is False
    assert result["truncatedBy"] is None
    assert result["totalLines"] == 2
    assert result["content"] == "a\nb\n"


def test_head_by_lines() -> None:
    text = "\n".join(str(i) for i in range(2500))
    result = truncate_head(text)
    assert result["truncatedBy"] == "lines"
    assert result["outputLines"] == 2000
    assert result["content"].split("\n")[-1] == "1999"
    assert result["totalLines"] == 2500


def test_head_by_bytes_keeps_whole_lines() -> None:
    line = "x" * 1000
    result = truncate_head("\n".join([line] * 100))
    assert result["truncatedBy"] == "bytes"
    assert result["outputLines"] == 51
    assert result["outputBytes"] == 51 * 1000 + 50


def test_head_first_line_over_cap_keeps_nothing() -> None:
    result = truncate_head("y" * 60000 + "\nshort")
    assert result["firstLineExceedsLimit"] is True
    assert result["content"] == ""
    assert result["truncatedBy"] == "bytes"


def test_tail_by_lines_keeps_the_end() -> None:
    result = truncate_tail("\n".join(str(i) for i in range(3000)))
    assert result["content"].split("\n")[0] == "1000"
    assert result["truncatedBy"] == "lines"


def test_tail_partial_last_line_cuts_on_utf8_boundary() -> None:
    result = truncate_tail("é" * 40000)  # 80000 bytes in one line
    assert result["lastLinePartial"] is True
    assert result["outputBytes"] <= 51200
    assert set(result["content"]) == {"é"}


def test_truncation_metadata_keys() -> None:
    assert set(truncate_tail("a")) == {
        "content", "truncated", "truncatedBy", "totalLines", "totalBytes", "outputLines",
        "outputBytes", "lastLinePartial", "firstLineExceedsLimit", "maxLines", "maxBytes",
    }


def test_truncate_line_marks_cut_lines() -> None:
    assert truncate_line("short") == ("short", False)
    text, cut = truncate_line("z" * 600)
    assert cut and text == "z" * 500 + "... [truncated]"
