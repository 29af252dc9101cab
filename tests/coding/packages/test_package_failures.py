"""A package command whose npm or git step fails, against pi 1.6.0: the child's own output stays on the
stream the child wrote it to (git's and npm's errors on stderr, not on our stdout), then pi's
``Error: <command> failed with code <n>`` line, exit 1, settings untouched. The "server" is a port
bound on 127.0.0.1 that never listens, so each connection is refused at once.
"""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Iterator

import pytest

from tests.coding.packages.test_packages import _env
from tests.support.cli_sides import needs_reference
from tests.support.package_fixtures import run_pi


@pytest.fixture
def refused_port() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


def _answer(kind: str, argv: list[str], settings: dict, port: int, tmp_path) -> tuple[int, str, list[str], str]:
    home, work = tmp_path / kind / "home", tmp_path / kind / "work"
    work.mkdir(parents=True)
    env = _env(home) | {"npm_config_registry": f"http://127.0.0.1:{port}/", "npm_config_fetch_retries": "0"}
    (home / ".pi" / "agent" / "settings.json").write_text(json.dumps(settings))
    done = run_pi(kind, [a.replace("PORT", str(port)) for a in argv], env, work)
    # npm's own lines carry its Node.js version's stack; the rest must match
    stderr = [line.replace(str(home), "HOME") for line in done.stderr.splitlines() if not line.startswith("npm error")]
    settings_text = (home / ".pi" / "agent" / "settings.json").read_text()
    return done.returncode, done.stdout.replace(str(home), "HOME"), stderr, settings_text


@needs_reference
@pytest.mark.parametrize("argv, configured", [
    (["install", "git:127.0.0.1:PORT/x/y"], []),
    (["update", "--extensions"], ["git:127.0.0.1:PORT/x/y"]),
    (["install", "npm:pi-missing-pkg"], []),
    (["update", "npm:pi-missing-pkg"], ["npm:pi-missing-pkg"]),
], ids=["git-install", "git-update", "npm-install", "npm-update"])
def test_a_failing_step_is_reported_as_pi_reports_it(argv, configured, refused_port, tmp_path):
    settings = {"packages": [s.replace("PORT", str(refused_port)) for s in configured]}
    ours = _answer("ours", argv, settings, refused_port, tmp_path)
    assert ours == _answer("reference", argv, settings, refused_port, tmp_path)
    assert ours[0] == 1 and re.fullmatch(r"Error: (git|npm) .* failed with code (1|128)", ours[2][-1])
