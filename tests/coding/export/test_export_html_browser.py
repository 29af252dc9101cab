"""HTML export, browser side: the exported page opened in headless Chromium.

Chromium is driven from the command line only (``--dump-dom`` for the DOM after the page's scripts
ran, ``--screenshot`` for a picture); without the ``chromium`` binary these tests skip.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from urllib.parse import quote

import pytest

from pi_coding_agent.coding.session import SessionManager
from tests.coding.export.test_export_html import assistant, export, rich_session, text, user
from tests.support.requirements import CHROMIUM

pytestmark = pytest.mark.browser


def run_chromium(tmp_path: Path, url: str, *mode: str) -> str:
    """One headless Chromium run on ``url`` with no network or profile side effects; returns stdout."""
    assert CHROMIUM is not None
    profile = tmp_path / "chromium-profile"
    command = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               f"--user-data-dir={profile}", *mode, url]
    env = {**os.environ, "HOME": str(tmp_path)}
    done = subprocess.run(command, capture_output=True, text=True, timeout=180, env=env, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def dump_dom(tmp_path: Path, page: Path, fragment: str = "") -> str:
    return run_chromium(tmp_path, page.as_uri() + fragment, "--dump-dom")


def body_of(dom: str) -> str:
    """The rendered part of the DOM (after the inlined stylesheet, before the data and script)."""
    start = dom.index('<div id="layout">')
    return dom[start:dom.index('<script id="session-data"')]


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """The rich session's page, exported once for the module (the tests only read it)."""
    root = tmp_path_factory.mktemp("exported")
    sm, ids = rich_session(root)
    return export(sm, root, system_prompt="You are a test assistant.",
                  tools=[{"name": "read", "description": "Read a file", "parameters": {}}]), ids


@pytest.fixture(scope="module")
def exported_dom(exported: tuple[Path, dict[str, str]]) -> str:
    """Its DOM once the page's scripts ran: one Chromium run read by the tests of the default view."""
    page, _ = exported
    return dump_dom(page.parent, page)


def test_page_shows_the_active_branch(exported: tuple[Path, dict[str, str]], exported_dom: str) -> None:
    page, _ = exported
    html = body_of(exported_dom)
    # header: name, model, directory, totals
    assert "<h1>Review &lt;b&gt;session&lt;/b&gt;</h1>" in html
    assert "mock/mock-model, mock/other-model" in html and str(page.parent) in html
    assert "Tokens</dt><dd>9,600 (in 8,000, out 1,600" in html and "Cost</dt><dd>$0.10</dd>" in html
    # user text and image; assistant Markdown with a highlighted fence; thinking collapsed
    assert "Please fix the greeting" in html and '<img class="image" alt="image (image/png)" src="data:image/png;base64,' in html
    assert '<h3 class="md-h2">Plan for <strong>the fix</strong></h3>' in html
    assert '<a href="https://example.com/docs" rel="noopener noreferrer" target="_blank">the docs</a>' in html
    assert "a bad link" in html and "javascript:" not in html
    assert '<th style="text-align: center;">Tool</th>' in html and "<del>pending</del>" in html
    assert "<li><p>Second item</p><ul><li><p>nested bullet</p></li></ul></li>" in html
    assert '<span class="tok-keyword">def</span> <span class="tok-function">greet</span>' in html
    assert '<span class="tok-comment"># say hello</span>' in html
    assert '<details class="thinking"><summary>Thinking</summary>' in html and "SECRET-THOUGHT" not in html
    # tools: arguments, results, diff colours, error
    assert '<span class="tool-name">bash</span><span class="tool-args">$ ls -la</span>' in html
    assert "&lt;b&gt;bold&lt;/b&gt;&lt;img src=x onerror=" in html
    assert '<span class="tok-keyword">class</span> <span class="tok-type">App</span>' in html
    assert '<span class="diff-line diff-del">- 2 old_line = 1\n</span>' in html
    assert '<span class="diff-line diff-add">+ 2 new_line = 2\n</span>' in html
    assert '<div class="tool tool-write error">' in html and "EACCES: permission denied" in html
    # aborts, errors, user shell, settings changes, summaries, custom messages
    assert '<div class="status aborted">Aborted: Request was aborted</div>' in html
    assert '<div class="status error">Error: 429 rate limited: slow down</div>' in html
    assert "$ make test" in html and "exit code 2" in html
    assert "Model: mock/other-model" in html and "Thinking level: high" in html
    assert "Context compacted" in html and "12,345 tokens before" in html
    assert "Branch summary" in html and "The user tried another idea." in html
    assert "An <strong>extension</strong> note" in html
    assert "MAIN-BRANCH final answer" in html and "OTHER-BRANCH answer" not in html
    # the other branch is listed
    assert re.search(r'<nav class="fork">.*data-leaf="\w+">OTHER-BRANCH question</button>', html)
    assert html.count('<button class="branch"') == 2


def test_hostile_content_stays_text(exported_dom: str) -> None:
    dom = exported_dom
    assert "PWNED" not in dom.split("<title>")[1].split("</title>")[0]
    assert not re.search(r"\sdata-pwned2?=", dom)  # neither injected handler ran
    assert "&lt;/script&gt;&lt;script&gt;document.title='PWNED'" in dom
    assert dom.count("<script") == 2
    assert '<img src="x"' not in dom


def test_fragment_selects_another_branch(tmp_path: Path, exported: tuple[Path, dict[str, str]]) -> None:
    page, ids = exported
    html = body_of(dump_dom(tmp_path, page, "#leafId=" + quote(ids["other_leaf"])))
    assert "OTHER-BRANCH question" in html and "OTHER-BRANCH answer" in html
    assert "MAIN-BRANCH final answer" not in html and "Branch summary" not in html
    assert '<span class="label-badge">explored</span>' in html
    assert '<li class="active"><button class="branch" type="button"><span class="branch-title">OTHER-BRANCH' in html
    # an unknown id falls back to the session's own leaf
    assert "MAIN-BRANCH final answer" in body_of(dump_dom(tmp_path, page, "#leafId=nope"))


def test_screenshot(tmp_path: Path, exported: tuple[Path, dict[str, str]]) -> None:
    page, _ = exported
    shot = tmp_path / "page.png"
    run_chromium(tmp_path, page.as_uri(), f"--screenshot={shot}", "--window-size=1280,2000",
                 "--hide-scrollbars")
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (1280, 2000)


@pytest.fixture(scope="module")
def large_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 20,000-entry session's page, exported once for the module."""
    root = tmp_path_factory.mktemp("large")
    sm = SessionManager.create(root, root / "sessions")
    for turn in range(10_000):
        sm.append_message(user(f"question {turn}"))
        sm.append_message(assistant(text(f"answer **{turn}**\n\n```js\nconst x = {turn};\n```")))
    assert len(sm.get_entries()) == 20_000
    return export(sm, root)


@pytest.fixture(scope="module")
def large_dom(large_page: Path) -> str:
    """The large page's rendered part in a default window: one Chromium run for both tests."""
    return body_of(dump_dom(large_page.parent, large_page))


def rendered_entries(html: str) -> int:
    return len(re.findall(r'<section class="entry ', html))


def test_large_session_starts_with_one_batch(large_dom: str) -> None:
    html = large_dom
    messages = html[html.index('<div id="messages"'):]
    assert 0 < rendered_entries(html) < 200  # the rest is built when the reader scrolls near the end
    assert "question 0" in messages and "question 9999" not in messages
    assert re.search(r"Show \d+ more of [\d,]+ remaining", html)
    assert "20,000 in 20,000 entries" in html


def test_large_session_adds_batches_near_the_bottom(tmp_path: Path, large_page: Path, large_dom: str) -> None:
    # A very tall window keeps the end of the list in view: batches are added until it is out of reach
    # again (virtual time lets the page's scheduled batches run before the DOM is dumped).
    first = rendered_entries(large_dom)
    tall = run_chromium(tmp_path, large_page.as_uri(), "--window-size=1280,30000", "--virtual-time-budget=5000",
                        "--dump-dom")
    assert first < rendered_entries(body_of(tall)) < 2_000


EDGE_MARKDOWN = r"""### Heading three ###

***both*** and snake_case_name and 2 * 3 * 4 and \*not emphasis\* and `a | b`
[paren link](https://a.example/c_(d)) <https://auto.example> https://bare.example/path.
<div onclick="alert(1)">raw html</div>

---

3. third
4. fourth

```
unclosed fence with <b>markup</b>
"""


def test_markdown_edge_cases(tmp_path: Path) -> None:
    sm = SessionManager.create(tmp_path, tmp_path / "sessions")
    sm.append_message(user("edge cases"))
    sm.append_message(assistant(text(EDGE_MARKDOWN)))
    sm.append_message(assistant(text("`start " + "* [ _ ~ " * 3000 + "end")))  # unmatched delimiters, one paragraph
    html = body_of(dump_dom(tmp_path, export(sm, tmp_path)))
    assert "Could not render" not in html
    assert '<h4 class="md-h3">Heading three</h4>' in html
    assert "<strong><em>both</em></strong> and snake_case_name and 2 * 3 * 4 and *not emphasis*" in html
    assert '<code class="inline">a | b</code>' in html
    assert '<a href="https://a.example/c_(d)" rel="noopener noreferrer" target="_blank">paren link</a>' in html
    assert '<a href="https://auto.example" rel="noopener noreferrer" target="_blank">https://auto.example</a>' in html
    assert ">https://bare.example/path</a>." in html
    assert "&lt;div onclick=\"alert(1)\"&gt;raw html&lt;/div&gt;" in html and "<div onclick" not in html
    assert "<hr>" in html and '<ol start="3"><li><p>third</p></li><li><p>fourth</p></li></ol>' in html
    assert "<pre class=\"code\"><code>unclosed fence with &lt;b&gt;markup&lt;/b&gt;\n</code></pre>" in html
    assert html.count("* [ _ ~ ") == 3000 and "<p>`start * [" in html and " end</p>" in html
