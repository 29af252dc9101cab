"""mcp.json loading, merging and validation, tool naming, exposure rules, result shaping, mcp.log and
the tool_search ranking: the pure parts of coding/mcp, checked against pi's rules and texts."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pi_coding_agent.coding.mcp.config import ServerEntry, load_config, validate_server
from pi_coding_agent.coding.mcp.log import MAX_LOG_BYTES, ServerLog, format_line
from pi_coding_agent.coding.mcp.naming import namespace, tool_name
from pi_coding_agent.coding.mcp.results import convert_result, truncate_middle
from pi_coding_agent.coding.mcp.tool_search import rank, tokenize
from pi_coding_agent.coding.tools.ranking import SearchDocument


def write(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)


def test_project_entries_replace_and_override_global_ones(tmp_path: Path) -> None:
    agent, cwd = tmp_path / "agent", tmp_path / "work"
    write(agent / "mcp.json", {"mcpServers": {"a": {"command": "x", "env": {"K": "v"}}, "b": {"url": "https://b/mcp"}}})
    write(cwd / ".pi" / "mcp.json", {"mcpServers": {"a": {"enabled": False, "exposure": "codemode-deferred"},
                                                    "b": {"command": "local-b"}, "c": {"enabled": True}}})
    config = load_config(agent, cwd, trusted=True)
    by_name = {e.name: e for e in config.servers}
    assert by_name["a"].config == {"command": "x", "env": {"K": "v"}, "enabled": False, "exposure": "codemode"}
    assert by_name["a"].override == str(cwd / ".pi" / "mcp.json") and by_name["a"].scope == "global"
    assert by_name["b"].config == {"command": "local-b"} and by_name["b"].scope == "project"
    assert config.errors == [f'{cwd / ".pi" / "mcp.json"}: server "c" needs "command" or "url", or a global server to override']
    untrusted = load_config(agent, cwd, trusted=False)
    assert [e.config for e in untrusted.servers] == [{"command": "x", "env": {"K": "v"}}, {"url": "https://b/mcp"}]


@pytest.mark.parametrize(("name", "raw", "error"), [
    ("bad name", {"command": "x"}, 'invalid server name "bad name" (use letters, digits, "_" and "-")'),
    ("s", [], 'server "s" must be an object'),
    ("s", {"type": "sse", "url": "http://x"}, 'server "s": legacy SSE transport is not supported; use the streamable HTTP URL'),
    ("s", {}, 'server "s" needs either "command" (stdio) or "url" (streamable HTTP)'),
    ("s", {"command": "x", "args": "a b"}, 'server "s": args must be an array of strings'),
    ("s", {"command": "x", "timeout": 0}, 'server "s": timeout must be a positive number of seconds'),
    ("s", {"url": "ftp://x"}, 'server "s": url must be an http or https URL'),
    ("s", {"url": "https://x", "headers": {"A": 1}}, 'server "s": headers must map names to strings'),
    ("s", {"command": "x", "exposure": "open"},
     'server "s": exposure must be one of "codemode", "deferred", "direct", "hidden"'),
    ("s", {"command": "x", "toolExposure": {"t": "nope"}},
     'server "s": toolExposure "t" must be one of "codemode", "deferred", "direct", "hidden"'),
])
def test_invalid_entries_get_pis_messages(name: str, raw: object, error: str) -> None:
    assert validate_server(name, raw) == error


def test_broken_file_and_name_clash_are_reported_and_the_rest_loads(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    write(agent / "mcp.json", {"mcpServers": {"dev-tools": {"command": "x"}, "dev_tools": {"command": "y"},
                                              "ok": {"command": "z", "unknownField": 1}}})
    config = load_config(agent, tmp_path, trusted=False)
    assert [e.name for e in config.servers] == ["dev-tools", "ok"]
    assert config.servers[1].config["unknownField"] == 1
    assert config.errors == [f'{agent / "mcp.json"}: server "dev_tools" conflicts with "dev-tools"']
    write(agent / "mcp.json", "{not json")
    broken = load_config(agent, tmp_path, trusted=False)
    assert broken.servers == [] and broken.errors[0].startswith(f"{agent / 'mcp.json'}: ")


def test_tool_names_and_exposure_rules() -> None:
    assert tool_name("dev-radius", "get.item") == "mcp__dev_radius__get_item"
    assert namespace("dev-radius") == "mcp__dev_radius"
    long = tool_name("server", "x" * 80)
    assert len(long) == 64 and long == f"mcp__server__{'x' * 42}_{long[-8:]}"
    taken = tool_name("s", "a-b", lambda n: n == "mcp__s__a_b")
    assert taken.startswith("mcp__s__a_b_") and len(taken) == len("mcp__s__a_b_") + 8
    entry = ServerEntry("s", {"command": "x", "exposure": "deferred",
                              "toolExposure": {"get_*": "codemode", "get_one": "direct", "*": "hidden"}}, "f", "global")
    assert [entry.tool_exposure(t) for t in ("get_one", "get_two", "delete")] == ["direct", "codemode", "hidden"]
    assert entry.configured_exposures() == {"deferred", "codemode", "direct", "hidden"}


def test_results_are_shaped_like_pis() -> None:
    content, details, structured, is_error = convert_result("srv", "t", {
        "content": [], "isError": True, "_meta": {"x": 1}})
    assert content == [{"type": "text", "text": "MCP tool srv/t returned an error"}] and is_error
    assert structured == {"content": [], "isError": True} and details == {"server": "srv", "tool": "t"}
    content, _, _, _ = convert_result("srv", "t", {"content": [], "structuredContent": {"a": 1}})
    assert content == [{"type": "text", "text": '{\n  "a": 1\n}'}]
    link = {"type": "resource_link", "uri": "file:///a.txt", "name": "a", "mimeType": "text/plain", "size": 2048}
    content, _, _, _ = convert_result("srv", "t", {"content": [link, {"type": "audio", "mimeType": "audio/wav"}]}, True)
    assert content == [{"type": "text", "text": '[Resource file:///a.txt "a" (text/plain, 2.0KB). Read it with '
                                                'read_mcp_resource (server "srv")]'},
                       {"type": "text", "text": "[audio audio/wav omitted]"}]


def test_middle_cut_keeps_character_boundaries() -> None:
    text = "é" * 20_000  # 40,000 bytes
    cut, total, lines = truncate_middle(text) or ("", 0, 0)
    head, _, tail = cut.partition("…")
    assert total == 40_000 and lines == 1
    assert head == "é" * 5120 and tail.endswith("é" * 5120)
    assert "…9760 chars truncated…" in cut
    assert truncate_middle("short") is None


def test_log_lines_and_rotation(tmp_path: Path) -> None:
    now = datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
    assert format_line("s", {"level": "error", "logger": "db", "data": "a\r\nb"}, now) == \
        "2026-01-02T03:04:05.678Z [s] error db: a\n    b\n"
    assert format_line("s", {"data": {"k": [1, 2]}}, now) == '2026-01-02T03:04:05.678Z [s] info {"k":[1,2]}\n'
    path = tmp_path / "mcp.log"
    path.write_bytes(b"x" * (MAX_LOG_BYTES + 1))
    ServerLog(path).write("s", {"data": "fresh"})
    assert (tmp_path / "mcp.log.1").stat().st_size == MAX_LOG_BYTES + 1
    assert path.read_text().endswith("[s] info fresh\n")


def test_tool_search_ranking() -> None:
    assert tokenize("getIssues for the HTTPServer") == ["get", "issue", "http", "server"]
    docs = [SearchDocument("mcp__gh__list_issues", "List issues in a repository", "mcp__gh GitHub"),
            SearchDocument("mcp__gh__create_issue", "Create an issue", "mcp__gh GitHub"),
            SearchDocument("mcp__fs__read_file", "Read a file from disk, not an issue tracker", "mcp__fs")]
    assert rank("create issue", docs, 2) == ["mcp__gh__create_issue", "mcp__gh__list_issues"]
    assert rank("read_file", docs, 1) == ["mcp__fs__read_file"]
    assert rank("the", docs, 5) == []
