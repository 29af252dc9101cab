"""Damaged session files in a real terminal (tmux), ours and pi 1.6.0 side by side: ``/resume`` lists
and opens the sessions among them, and a file that is no session is refused in one error at start-up;
no file is rewritten."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from pi_coding_agent.coding.paths import default_session_dir
from tests.coding.interactive.test_interactive_commands import session_file
from tests.coding.interactive.test_interactive_tmux import Tmux, pytestmark  # noqa: F401
from tests.support.cli_sides import FAKE_MODEL, fake_agent_env, needs_reference, pi_command

NOT_A_SESSION = b"\x00\x01garbage\xff\xfe not json at all\nsecond {line\n"


def _folder(tmp_path: Path) -> tuple[dict[str, str], Path, Path]:
    """The environment (no request is made), the working folder and its session folder, holding a
    good session, one whose last line is cut short, one with a line of garbage, an empty file and a
    file that is not JSON."""
    env = fake_agent_env(tmp_path / "home", "http://127.0.0.1:9")
    work = (tmp_path / "work").resolve()
    work.mkdir()
    folder = default_session_dir(Path(env["PI_CODING_AGENT_DIR"]), work)
    folder.mkdir(parents=True)
    session_file(folder / "good.jsonl", "77777770-2222-3333-4444-555555555555", work, "question good", "answer good")
    cut = session_file(folder / "cut.jsonl", "77777771-2222-3333-4444-555555555555", work, "question cut", "answer cut")
    cut.write_bytes(cut.read_bytes()[:-40])
    garbled = session_file(folder / "garbled.jsonl", "77777772-2222-3333-4444-555555555555", work,
                           "question garbled", "answer garbled")
    lines = garbled.read_bytes().splitlines(keepends=True)
    garbled.write_bytes(b"".join([*lines[:2], b"this is {not json\n", *lines[2:]]))
    (folder / "empty.jsonl").write_bytes(b"")
    (folder / "binary.jsonl").write_bytes(NOT_A_SESSION)
    return env, work, folder


def _pane(kind: str, env: dict[str, str], work: Path, *argv: str) -> Tmux:
    command, env = pi_command(kind, [*FAKE_MODEL, *argv], env)
    env = {k: v for k, v in env.items() if k not in ("COLUMNS", "LINES")} | {"TERM": "xterm-256color"}
    return Tmux(f"{shlex.join(command)}; echo EXITED $?; sleep 60", work, env)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["ours", pytest.param("reference", marks=needs_reference)])
def test_resume_lists_and_opens_the_sessions_among_damaged_files(kind: str, tmp_path: Path) -> None:
    env, work, folder = _folder(tmp_path)
    before = {path.name: path.read_bytes() for path in folder.iterdir()}
    pane = _pane(kind, env, work)
    try:
        pane.wait_for(lambda s: "escape interrupt" in s)
        pane.keys("/resume")
        pane.wait_for(lambda s: "/resume" in s)
        pane.keys("Enter")
        screen = pane.wait_for(lambda s: all(f"question {n}" in s for n in ("good", "cut", "garbled")))
        assert "not json" not in screen and "(no messages)" not in screen  # the empty and binary files
        for name in ("garbled", "cut"):
            pane.keys(name)
            pane.wait_for(lambda s, name=name: f"question {name}" in s and "question good" not in s)
            pane.keys("Enter")
            pane.wait_for(lambda s: "Resumed session" in s)
            if name == "garbled":
                pane.wait_for(lambda s: "answer garbled" in s)
                pane.keys("/resume")
                pane.wait_for(lambda s: "/resume" in s)
                pane.keys("Enter")
                pane.wait_for(lambda s: "question good" in s)
        assert "EXITED" not in pane.screen()
    finally:
        pane.kill()
    after = {path.name: path.read_bytes() for path in folder.iterdir()}
    assert after.keys() == before.keys()
    for name, data in before.items():  # an opened session may only have grown
        assert after[name].startswith(data), name


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["ours", pytest.param("reference", marks=needs_reference)])
def test_a_file_that_is_no_session_is_refused_at_start_up_in_one_error(kind: str, tmp_path: Path) -> None:
    env, work, folder = _folder(tmp_path)
    pane = _pane(kind, env, work, "--session", str(folder / "binary.jsonl"))
    try:
        screen = pane.wait_for(lambda s: "EXITED" in s)
    finally:
        pane.kill()
    assert "EXITED 1" in screen and "Warning" not in screen
    joined = "".join(screen.splitlines())  # the line wraps at the pane's width
    assert joined.startswith(f"Error: Session file is not a valid pi session: {folder / 'binary.jsonl'}EXITED 1")
    assert (folder / "binary.jsonl").read_bytes() == NOT_A_SESSION
