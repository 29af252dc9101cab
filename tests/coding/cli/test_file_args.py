"""``@path`` arguments in print and JSON mode: what the model receives, and the errors, vs pi 1.6.0.

Both implementations run in the same working folder with the same files, so the absolute paths in the
``<file name="…">`` blocks are identical and the request bodies can be compared as they are.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.coding.tools.test_tool_read import png_bytes
from tests.support.cli_sides import FAKE_MODEL, fake_agent_env, needs_reference, pi_command
from tests.support.fakes.llm_server import FakeLLMServer

FILES = ["@notes.txt", "@pic.png", "@empty.txt", "@blob.bin", "@sub/../more.md"]


@pytest.fixture
def work(tmp_path: Path) -> Path:
    cwd = tmp_path / "work"
    (cwd / "sub").mkdir(parents=True)
    (cwd / "notes.txt").write_bytes("\ufeffline one\nline two\n".encode())
    (cwd / "pic.png").write_bytes(png_bytes())
    (cwd / "empty.txt").write_bytes(b"")
    (cwd / "blob.bin").write_bytes(b"ab\x00\xff\xfecd")
    (cwd / "more.md").write_text("# more")
    (cwd / "folder").mkdir()
    return cwd


def run(kind: str, cwd: Path, argv: list[str], server_url: str = "http://127.0.0.1:9") -> subprocess.CompletedProcess[str]:
    env = fake_agent_env(cwd.parent / f"home-{kind}", server_url, input=["text", "image"])
    command, env = pi_command(kind, [*FAKE_MODEL, "--no-session", *argv], env)
    return subprocess.run(command, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=120, check=False)


def user_message_sent(kind: str, cwd: Path, argv: list[str]) -> dict[str, Any]:
    with FakeLLMServer() as server:
        server.add({"content": [{"type": "text", "text": "reviewed"}]})
        done = run(kind, cwd, argv, server.url)
        assert done.returncode == 0, done.stderr
        assert len(server.requests) == 1
        message: dict[str, Any] = server.requests[0]["body"]["messages"][-1]
    return message


@pytest.mark.slow
def test_text_blocks_and_image_reach_the_model(work):
    message = user_message_sent("ours", work, ["-p", *FILES, "review these"])
    text, image = message["content"]
    assert text == {"type": "text", "text": (
        f'<file name="{work}/notes.txt">\nline one\nline two\n\n</file>\n'
        f'<file name="{work}/pic.png"></file>\n'
        f'<file name="{work}/blob.bin">\nab\x00\ufffd\ufffdcd\n</file>\n'
        f'<file name="{work}/more.md">\n# more\n</file>\n'
        "review these")}
    assert image["type"] == "image_url" and image["image_url"]["url"].startswith("data:image/png;base64,")


@needs_reference
@pytest.mark.parametrize("mode", [["-p"], ["--mode", "json"]], ids=["print", "json"])
def test_request_matches_reference(work, mode):
    argv = [*mode, *FILES, "review these"]
    assert user_message_sent("ours", work, argv) == user_message_sent("reference", work, argv)


@pytest.mark.slow
def test_files_alone_make_the_prompt(work):
    message = user_message_sent("ours", work, ["-p", "@more.md"])
    assert message["content"] == [{"type": "text", "text": f'<file name="{work}/more.md">\n# more\n</file>\n'}]


@pytest.mark.parametrize(("arg", "expected"), [
    ("@missing.txt", "Error: File not found: {cwd}/missing.txt"),
    ("@folder", "Error: Could not read file {cwd}/folder: EISDIR: illegal operation on a directory, read"),
])
@pytest.mark.slow
def test_unusable_file_stops_before_any_request(work, arg, expected):
    with FakeLLMServer() as server:
        done = run("ours", work, ["-p", arg, "hi"], server.url)
        assert server.requests == []
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.strip() == expected.format(cwd=work)


@needs_reference
def test_missing_file_matches_reference(work):
    ours, reference = (run(kind, work, ["-p", "@missing.txt", "hi"]) for kind in ("ours", "reference"))
    assert ours.returncode == reference.returncode == 1
    line = f"Error: File not found: {work}/missing.txt"
    assert line in ours.stderr.splitlines() and line in reference.stderr.splitlines()


@needs_reference
def test_directory_fails_in_both_and_only_ours_says_why(work):
    """pi 1.6.0 dies with a Node stack trace on a directory; ours prints one line (docs/rpc.md)."""
    ours, reference = (run(kind, work, ["-p", "@folder", "hi"]) for kind in ("ours", "reference"))
    assert ours.returncode == 1 and reference.returncode != 0
    assert "EISDIR" in reference.stderr
    assert "Traceback" not in ours.stderr and len(ours.stderr.strip().splitlines()) == 1
