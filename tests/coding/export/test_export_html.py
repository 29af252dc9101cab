"""HTML export, Python side: errors, output paths, the embedded data, and that nothing can inject markup.

The browser side (what the page shows) is in test_export_html_browser.py; the session built here
(`rich_session`) is shared with it.
"""

from __future__ import annotations

import base64
import json
import re
import struct
import zlib
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import orjson
import pytest

from pi_coding_agent.coding.export.html import (
    IN_MEMORY_ERROR,
    NOTHING_YET_ERROR,
    ExportError,
    export_cli,
    export_session_html,
    render_page,
)
from pi_coding_agent.coding.session import SessionManager

FIXTURES = Path(__file__).parents[2] / "support" / "fixtures" / "sessions"
INJECTION = "</script><script>document.title='PWNED';document.body.setAttribute('data-pwned','1')</script>"
HTML_OUTPUT = '<b>bold</b><img src=x onerror="document.body.dataset.pwned2=1"><!-- c --> & \u2028 done'
DATA_RE = re.compile(r'<script id="session-data" type="application/octet-stream">([^<]*)</script>')

_clock = [1_796_000_000_000]


def _ms() -> int:
    _clock[0] += 1000
    return _clock[0]


def _usage(tokens_in: int, tokens_out: int, cost: float) -> dict[str, Any]:
    return {"input": tokens_in, "output": tokens_out, "cacheRead": 0, "cacheWrite": 0,
            "totalTokens": tokens_in + tokens_out,
            "cost": {"input": cost / 2, "output": cost / 2, "cacheRead": 0, "cacheWrite": 0, "total": cost}}


def user(text: str, *images: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}, *images], "timestamp": _ms()}


def assistant(*blocks: dict[str, Any], stop: str = "stop", error: str | None = None) -> dict[str, Any]:
    message = {"role": "assistant", "content": list(blocks), "api": "openai-completions", "provider": "mock",
               "model": "mock-model", "usage": _usage(1000, 200, 0.0125), "stopReason": stop, "timestamp": _ms()}
    if error is not None:
        message["errorMessage"] = error
    return message


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"type": "toolCall", "id": call_id, "name": name, "arguments": arguments}


def result(call_id: str, name: str, output: str, *, is_error: bool = False, details: Any = None) -> dict[str, Any]:
    message = {"role": "toolResult", "toolCallId": call_id, "toolName": name, "content": [text(output)],
               "isError": is_error, "timestamp": _ms()}
    if details is not None:
        message["details"] = details
    return message


def png_block(size: int = 24) -> dict[str, Any]:
    """A real (tiny, gradient) PNG image block, so the browser test sees an image decode."""
    rows = b"".join(b"\x00" + bytes(c for x in range(size) for c in (x * 10, y * 10, 160)) for y in range(size))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))
    return {"type": "image", "data": base64.b64encode(png).decode(), "mimeType": "image/png"}


MARKDOWN = """## Plan for **the fix**

I will *inspect* the file, then edit it. See [the docs](https://example.com/docs), `config.py`
and [a bad link](javascript:alert(1)).

| Step | Tool | Status |
|:-----|:----:|-------:|
| 1 | `read` | done |
| 2 | edit | ~~pending~~ done |

1. First item
2. Second item
   - nested bullet
- [x] task done

> Quoted remark

```python
def greet(name: str) -> str:
    # say hello
    return f"Hello {name}" + str(42)
```
"""


def rich_session(directory: Path) -> tuple[SessionManager, dict[str, str]]:
    """A session with every kind of entry the page renders, two branches, and hostile content.

    Returns the manager (leaf = the main branch) and the ids the tests look for.
    """
    sm = SessionManager.create(directory, directory / "sessions")
    ids: dict[str, str] = {}
    sm.append_session_info("Review <b>session</b>")
    sm.append_model_change("mock", "mock-model")
    sm.append_thinking_level_change("medium")
    sm.append_message({"role": "system", "content": "", "sections": {"preamble": "You are a test assistant."},
                       "toolsAdded": [{"name": "read", "description": "Read a file", "parameters": {}}],
                       "timestamp": _ms()})
    ids["first_user"] = sm.append_message(user("Please fix the greeting", png_block()))["id"]
    sm.append_message(assistant({"type": "thinking", "thinking": "SECRET-THOUGHT about the fix"}, text(MARKDOWN),
                                call("c1", "read", path="src/app.py"), call("c2", "bash", command="ls -la"),
                                stop="toolUse"))
    sm.append_message(result("c1", "read", "import os\n\nclass App:\n    def run(self):\n        return 'ok'\n"))
    sm.append_message(result("c2", "bash", HTML_OUTPUT))
    diff = "  1 import os\n- 2 old_line = 1\n+ 2 new_line = 2\n  3 done"
    sm.append_message(assistant(call("c3", "edit", path="src/app.py", edits=[{"oldText": "a", "newText": "b"}]),
                                call("c4", "write", path="notes.md", content="# Notes\n"), stop="toolUse"))
    sm.append_message(result("c3", "edit", "Successfully replaced 1 block(s) in src/app.py.",
                             details={"diff": diff, "firstChangedLine": 2}))
    sm.append_message(result("c4", "write", "EACCES: permission denied", is_error=True))
    ids["branch_point"] = sm.append_message(assistant(text("Done with the first part.")))["id"]
    # A second branch from here, abandoned later.
    ids["other_user"] = sm.append_message(user("OTHER-BRANCH question"))["id"]
    ids["other_leaf"] = sm.append_message(assistant(text("OTHER-BRANCH answer")))["id"]
    sm.append_label(ids["other_leaf"], "explored")
    sm.branch_with_summary(ids["branch_point"], "## Left branch\nThe user tried another idea.")
    sm.append_message(user(INJECTION))
    sm.append_message(assistant(text("partial"), stop="aborted", error="Request was aborted"))
    sm.append_message(assistant(stop="error", error="429 rate limited: slow down"))
    sm.append_message({"role": "bashExecution", "command": "make test", "output": "FAILED 2 tests\n",
                       "exitCode": 2, "cancelled": False, "truncated": False, "timestamp": _ms()})
    sm.append_model_change("mock", "other-model")
    sm.append_thinking_level_change("high")
    ids["before_compaction"] = sm.append_message(user("Summarise please"))["id"]
    sm.append_message(assistant(text("Summary follows.")))
    sm.append_compaction("## Goal\nFix the greeting.\n\n## Progress\n- edited `src/app.py`", ids["before_compaction"],
                         12345, details={"readFiles": ["src/app.py"], "modifiedFiles": []})
    sm.append_custom_message("note", "An **extension** note", True)
    ids["last_user"] = sm.append_message(user("MAIN-BRANCH final question"))["id"]
    ids["main_leaf"] = sm.append_message(assistant(text("MAIN-BRANCH final answer")))["id"]
    return sm, ids


def export(sm: SessionManager, out_dir: Path, output_path: str | None = None, **kwargs: Any) -> Path:
    return export_session_html(sm.session_file, sm.get_entries(), sm.header, sm.leaf_id, output_path, out_dir,
                               **kwargs)


def embedded(page: str) -> Any:
    match = DATA_RE.search(page)
    assert match is not None
    return orjson.loads(base64.b64decode(match.group(1)))


# ---------------------------------------------------------------------------------------------- errors


def test_in_memory_session_cannot_be_exported(tmp_path: Path) -> None:
    sm = SessionManager.create(tmp_path, None, persist=False)
    sm.append_message(user("hello"))
    with pytest.raises(ExportError) as info:
        export(sm, tmp_path)
    assert str(info.value) == IN_MEMORY_ERROR == "Cannot export in-memory session to HTML"


def test_session_without_a_file_yet_has_nothing_to_export(tmp_path: Path) -> None:
    sm = SessionManager.create(tmp_path, tmp_path / "sessions")
    sm.append_model_change("mock", "mock-model")  # setup entries stay in memory until a message arrives
    with pytest.raises(ExportError) as info:
        export(sm, tmp_path)
    assert str(info.value) == NOTHING_YET_ERROR == "Nothing to export yet - start a conversation first"
    assert list(tmp_path.glob("*.html")) == []


def test_unwritable_target_is_an_export_error(tmp_path: Path) -> None:
    sm, _ = rich_session(tmp_path)
    with pytest.raises(ExportError, match="Could not write"):
        export(sm, tmp_path, "missing-dir/out.html")


# ---------------------------------------------------------------------------------------------- paths


def test_default_output_is_pi_session_basename_in_cwd(tmp_path: Path) -> None:
    sm, _ = rich_session(tmp_path)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    path = export(sm, out_dir)
    assert sm.session_file is not None
    assert path == out_dir / f"pi-session-{sm.session_file.stem}.html"
    assert path.is_absolute() and path.is_file()


def test_output_path_relative_absolute_and_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sm, _ = rich_session(tmp_path)
    (tmp_path / "sub").mkdir()
    assert export(sm, tmp_path, "sub/review.html") == tmp_path / "sub" / "review.html"
    absolute = tmp_path / "abs.html"
    assert export(sm, tmp_path / "sub", str(absolute)) == absolute
    monkeypatch.setenv("HOME", str(tmp_path / "sub"))
    assert export(sm, tmp_path, "~/home.html") == tmp_path / "sub" / "home.html"
    for name in ("review.html", "home.html"):
        assert (tmp_path / "sub" / name).read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


# ---------------------------------------------------------------------------------------------- embedding


def test_embedded_data_is_the_whole_session(tmp_path: Path) -> None:
    sm, ids = rich_session(tmp_path)
    sm.branch(ids["other_leaf"])
    tools = [{"name": "read", "description": "Read a file", "parameters": {"type": "object"}, "label": "x"}]
    page = export(sm, tmp_path, system_prompt="You are <pi>.", tools=tools).read_text(encoding="utf-8")
    data = embedded(page)
    assert data == {"header": sm.header, "entries": sm.get_entries(), "leafId": ids["other_leaf"],
                    "systemPrompt": "You are <pi>.",
                    "tools": [{"name": "read", "description": "Read a file", "parameters": {"type": "object"}}]}


def test_absent_prompt_and_tools_are_omitted(tmp_path: Path) -> None:
    sm, _ = rich_session(tmp_path)
    data = embedded(export(sm, tmp_path).read_text(encoding="utf-8"))
    assert set(data) == {"header", "entries", "leafId"}


@pytest.mark.parametrize("name", sorted(p.stem for p in FIXTURES.glob("*.jsonl")))
def test_reference_session_files_export_whole(name: str, tmp_path: Path) -> None:
    sm = SessionManager.open(FIXTURES / f"{name}.jsonl", tmp_path)
    expected = json.loads((FIXTURES / f"{name}.expected.json").read_text())
    data = embedded(export(sm, tmp_path).read_text(encoding="utf-8"))
    assert data["entries"] == expected["entries"]
    assert data["leafId"] == expected["leafId"]
    assert data["header"]["type"] == "session"


# ---------------------------------------------------------------------------------------------- escaping


def test_session_content_cannot_inject_markup(tmp_path: Path) -> None:
    sm, _ = rich_session(tmp_path)
    page = export(sm, tmp_path).read_text(encoding="utf-8")
    assert page.count("<script") == 2 and page.count("</script>") == 2  # the data element and the page's script
    for hostile in ("PWNED", "data-pwned", "onerror", "<!-- c -->", "<b>", "\u2028"):
        assert hostile not in page
    data = DATA_RE.search(page)
    assert data is not None and re.fullmatch(r"[A-Za-z0-9+/=]*", data.group(1))
    assert INJECTION in json.dumps(embedded(page), ensure_ascii=False)  # kept intact, only encoded


def test_page_is_self_contained_and_locked_down(tmp_path: Path) -> None:
    page = render_page({"header": {}, "entries": [], "leafId": None})
    assert "{{" not in page  # every placeholder filled
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert "<link" not in page and "@import" not in page and "url(" not in page
    csp = re.search(r"script-src 'nonce-([\w-]+)'", page)
    assert csp is not None and f'<script nonce="{csp.group(1)}">' in page
    assert "default-src 'none'" in page


def test_inlined_assets_cannot_end_their_own_element() -> None:
    from importlib import resources

    assets = resources.files("pi_coding_agent.coding.export") / "assets"
    script = (assets / "page.js").read_text(encoding="utf-8").lower()
    style = (assets / "page.css").read_text(encoding="utf-8").lower()
    assert "</script" not in script and "<!--" not in script
    assert "</style" not in style
    for sink in (".innerhtml", ".outerhtml", "insertadjacenthtml", "document.write", "eval(", "new function"):
        assert sink not in script  # session text only ever becomes text nodes


# ---------------------------------------------------------------------------------------------- CLI


def test_cli_exports_to_default_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    source = FIXTURES / "basic.jsonl"
    copy = tmp_path / "basic.jsonl"
    copy.write_bytes(source.read_bytes())
    assert export_cli(SimpleNamespace(export=[str(copy)])) == 0
    out = tmp_path / "pi-session-basic.html"
    assert capsys.readouterr().out == f"Exported to: {out}\n"
    assert embedded(out.read_text(encoding="utf-8"))["entries"][0]["type"] == "session_info"


def test_cli_output_argument_in_both_argument_shapes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    source = str(FIXTURES / "fork.jsonl")
    assert export_cli(SimpleNamespace(export=[source, "a.html"])) == 0
    assert export_cli(SimpleNamespace(export=source, export_output="b.html")) == 0
    assert capsys.readouterr().out == f"Exported to: {tmp_path / 'a.html'}\nExported to: {tmp_path / 'b.html'}\n"
    assert (tmp_path / "a.html").is_file() and (tmp_path / "b.html").is_file()


def test_cli_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert export_cli(SimpleNamespace(export=["nope.jsonl"])) == 1
    assert capsys.readouterr().err == f"Error: File not found: {tmp_path / 'nope.jsonl'}\n"
    bogus = tmp_path / "bogus.jsonl"
    bogus.write_text('{"type":"message"}\n')
    assert export_cli(SimpleNamespace(export=[str(bogus)])) == 1
    assert capsys.readouterr().err == f"Error: Session file is not a valid pi session: {bogus}\n"
    assert list(tmp_path.glob("*.html")) == []
