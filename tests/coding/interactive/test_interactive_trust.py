"""Interactive ``pi`` in a project whose ``.pi`` holds a prompt template, no saved trust decision and
``defaultProjectTrust`` ``ask``: "Trust project folder?" comes before the main screen, and each answer
decides whether the template loads (when not, a warning says so) and what trust.json keeps, ours and the reference side by side in
tmux (pi 1.6.0's behaviour, checked by hand first, is what the reference runs assert).
"""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import pytest

from tests.coding.interactive.test_interactive_tmux import Tmux
from tests.coding.packages.test_packages import _env
from tests.support.cli_sides import needs_reference, pi_command

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

KINDS = ["ours", pytest.param("reference", marks=needs_reference)]
LAST_CHOICE = "Do not trust (this session only)"
TEMPLATE = "---\ndescription: xprompt\n---\nhello x\n"

ANSWERS = [  # keys on the question, whether the project template loads, trust.json afterwards
    pytest.param(["Enter"], True, {"WORK": True}, id="trust"),
    pytest.param(["Down", "Enter"], True, {"PARENT": True}, id="trust-parent"),
    pytest.param(["Down", "Down", "Enter"], True, None, id="trust-session-only"),
    pytest.param(["Down", "Down", "Down", "Enter"], False, {"WORK": False}, id="do-not-trust"),
    pytest.param(["Down", "Down", "Down", "Down", "Enter"], False, None, id="do-not-trust-session-only"),
    pytest.param(["Escape"], False, None, id="escape"),
]


def _start(kind: str, root: Path, *argv: str) -> Tmux:
    """``pi <argv>`` on ``kind``'s side in ``root/work`` (a ``.pi/prompts/x.md`` project), HOME ``root/home``."""
    work = root / "work"
    (work / ".pi" / "prompts").mkdir(parents=True, exist_ok=True)
    (work / ".pi" / "prompts" / "x.md").write_text(TEMPLATE)
    command, env = pi_command(kind, list(argv), _env(root / "home"))
    env = {k: v for k, v in env.items() if k not in ("COLUMNS", "LINES")} | {"TERM": "xterm-256color",
                                                                           "PI_OFFLINE": "1"}
    return Tmux(f"{shlex.join(command)}; echo EXITED $?; sleep 60", work, env)


def _template_listed(pane: Tmux) -> bool:
    """Type ``/x`` in the main editor: whether the completion offers the project's template (and the
    start-up warning says the project is not trusted exactly when it does not)."""
    pane.wait_for(lambda s: "escape interrupt" in s)  # the main screen's header, on both sides
    pane.keys("/x")
    shown = pane.wait_for(lambda s: "export" in s.lower())  # a built-in command matches "x" everywhere
    assert ("This project is not trusted." in shown) is ("xprompt" not in shown)
    return "xprompt" in shown


def _saved(root: Path) -> dict[str, bool] | None:
    """trust.json with the work folder and its parent named WORK and PARENT (None: not written)."""
    path = root / "home" / ".pi" / "agent" / "trust.json"
    if not path.exists():
        return None
    names = {str((root / "work").resolve()): "WORK", str(root.resolve()): "PARENT"}
    return {names.get(k, k): v for k, v in json.loads(path.read_text()).items()}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("keys", "loaded", "saved"), ANSWERS)
def test_each_start_up_trust_answer_as_pi(kind, keys, loaded, saved, tmp_path):
    pane = _start(kind, tmp_path)
    try:
        asked = pane.wait_for(lambda s: LAST_CHOICE in s)
        assert "Trust project folder?" in asked and str((tmp_path / "work").resolve()) in asked
        assert "escape interrupt" not in asked  # asked before the main screen
        for key in keys:
            pane.keys(key)
        assert _template_listed(pane) is loaded
    finally:
        pane.kill()
    assert _saved(tmp_path) == saved


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("argv", "saved", "loaded"), [
    pytest.param(["-na"], None, False, id="no-approve-flag"),
    pytest.param(["-a"], None, True, id="approve-flag"),
    pytest.param([], False, False, id="saved-decision"),
])
def test_no_question_when_the_answer_is_known(kind, argv, saved, loaded, tmp_path):
    """A flag or a saved decision answers: no question, and trust.json stays as it was."""
    if saved is not None:
        agent = tmp_path / "home" / ".pi" / "agent"
        agent.mkdir(parents=True)
        (agent / "trust.json").write_text(json.dumps({str((tmp_path / "work").resolve()): saved}))
    pane = _start(kind, tmp_path, *argv)
    try:
        assert _template_listed(pane) is loaded
        assert LAST_CHOICE not in pane.screen()
    finally:
        pane.kill()
    assert _saved(tmp_path) == (None if saved is None else {"WORK": saved})
