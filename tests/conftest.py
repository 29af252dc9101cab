"""Shared fixtures; the skips of tests whose outside need is missing, and the closing summary of them."""

from __future__ import annotations

import os
import subprocess
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.fakes.llm_server import FakeLLMServer
from tests.support.requirements import NEEDS, missing
from tests.support.schedule import longest_first

Remount = Callable[[str], None]


@pytest.fixture
def fake_llm() -> Iterator[FakeLLMServer]:
    """A started scripted LLM server (see tests/support/fakes/llm_server.py), stopped after the test."""
    with FakeLLMServer() as server:
        yield server


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[tuple[Path, Remount]]:
    """A 1 MiB tmpfs mounted in the test's directory, and a way to remount it (``ro`` / ``rw``):
    the kernel's own full-disk and read-only errors. Mounting needs root (the CI runs the suite as root)."""
    mount = tmp_path / "tmpfs"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root (the CI runs the suite as root)")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")

    def remount(option: str) -> None:
        subprocess.run(["mount", "-o", f"remount,{option}", str(mount)], check=True)

    try:
        yield mount, remount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


FIXED_PORT_MODULES = frozenset({"test_oauth.py", "test_login_rpc.py", "test_auth_cli.py"})
"""Logins that bind pi's fixed OAuth callback ports (1455, 1456, 53692): one xdist worker runs them all."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test marked with a group whose need is missing here skips with the reason; tests that bind a
    fixed port share one xdist worker (``--dist loadgroup``, set in pyproject); under xdist the
    longest tests are handed out first (tests/support/schedule.py)."""
    for item in items:
        if item.path.name in FIXED_PORT_MODULES:
            item.add_marker(pytest.mark.xdist_group("fixed-ports"))
        groups = [marker for marker in NEEDS if item.get_closest_marker(marker) is not None]
        item.user_properties.append(("groups", ",".join(groups)))  # reports carry it (keywords hold folder names too)
        for marker in NEEDS:
            if item.get_closest_marker(marker) is not None and (reason := missing(marker)):
                item.add_marker(pytest.mark.skip(reason=reason))
                break
    if os.environ.get("PYTEST_XDIST_WORKER"):
        longest_first(items)


_OUTCOMES: dict[str, tuple[frozenset[str], str | None]] = {}
"""Each test's group markers and its skip reason (None when it ran), from the reports (xdist's too)."""


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    listed = dict(report.user_properties).get("groups", "")
    groups = frozenset(listed.split(",")) - {""} if isinstance(listed, str) else frozenset()
    if report.skipped:
        _OUTCOMES[report.nodeid] = (groups, _skip_reason(report.longrepr))
    elif report.when == "call" or report.failed:
        _OUTCOMES.setdefault(report.nodeid, (groups, None))


def _skip_reason(longrepr: Any) -> str:
    text = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return str(text).removeprefix("Skipped: ")


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """One line per group: how many of its tests ran and why the rest skipped; then other skips by reason."""
    lines = []
    for marker, need in NEEDS.items():
        outcomes = [reason for groups, reason in _OUTCOMES.values() if marker in groups]
        if outcomes:
            lines.append(f"{need.title}: {_tally(outcomes)}")
    others = [reason for groups, reason in _OUTCOMES.values() if not groups and reason is not None]
    lines += [f"skipped {count}: {reason}" for reason, count in Counter(others).most_common()]
    if lines:
        terminalreporter.section("what ran")
        for line in lines:
            terminalreporter.write_line(line)


def _tally(reasons: list[str | None]) -> str:
    ran = sum(reason is None for reason in reasons)
    text = f"{ran} of {len(reasons)} ran"
    skipped = Counter(reason for reason in reasons if reason is not None)
    return text + "".join(f"; {count} skipped: {reason}" for reason, count in skipped.most_common())
