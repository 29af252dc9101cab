"""The sandbox's checked opens (``coding/sandbox/files.py``): what a symlink may and may not reach,
with ``openat2`` and with the component walk that older kernels use."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from pi_coding_agent.coding.sandbox import files
from pi_coding_agent.coding.sandbox.policy import SandboxPolicy, SandboxRefusal

WRITE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC


@pytest.fixture(params=["openat2", "walk"])
def policy(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SandboxPolicy]:
    if request.param == "openat2" and not files.openat2_available():
        pytest.skip("this kernel has no openat2")
    monkeypatch.setattr(files, "_openat2_state", [request.param == "openat2"])
    for folder in ("work/inside", "outside", "tmp"):
        (tmp_path / folder).mkdir(parents=True)
    yield SandboxPolicy(mode="workspace-write", cwd=tmp_path / "work", temp_dir=tmp_path / "tmp")


def _write(policy: SandboxPolicy, path: Path, text: str = "x", create_dirs: bool = True) -> None:
    with os.fdopen(policy.open_write(str(path), WRITE, create_dirs), "w") as handle:
        handle.write(text)


def test_links_inside_the_workspace_still_work(policy: SandboxPolicy, tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "rel").symlink_to("inside")
    (work / "abs").symlink_to(work / "inside")
    (work / "inside" / "file-link").symlink_to("../inside/real.txt")
    _write(policy, work / "rel" / "a.txt", "a")
    _write(policy, work / "abs" / "new" / "deeper" / "b.txt", "b")
    _write(policy, work / "inside" / "file-link", "c")
    _write(policy, work / "inside" / ".." / "plain.txt", "d")
    assert (work / "inside" / "a.txt").read_text() == "a"
    assert (work / "inside" / "new" / "deeper" / "b.txt").read_text() == "b"
    assert (work / "inside" / "real.txt").read_text() == "c"
    assert (work / "plain.txt").read_text() == "d"
    with os.fdopen(policy.open_read(str(work / "rel" / "a.txt"))) as handle:
        assert handle.read() == "a"


def test_links_out_of_the_workspace_create_nothing_outside(policy: SandboxPolicy, tmp_path: Path) -> None:
    work, outside = tmp_path / "work", tmp_path / "outside"
    (work / "out").symlink_to(outside)
    (work / "dangling").symlink_to(outside / "created.txt")
    (work / "hop").symlink_to("inside/../out")
    for path in (work / "out" / "a.txt", work / "out" / "new" / "b.txt", work / "dangling",
                 work / "hop" / "c.txt", work / ".." / "outside" / "d.txt"):
        with pytest.raises(SandboxRefusal, match="write outside the workspace refused"):
            _write(policy, path)
    assert list(outside.iterdir()) == []


def test_reads_that_reach_proc_by_any_link_are_refused(policy: SandboxPolicy, tmp_path: Path) -> None:
    (tmp_path / "work" / "env").symlink_to("/proc/self/environ")
    (tmp_path / "work" / "fds").symlink_to("/dev/fd")
    for path in ("/proc/self/environ", str(tmp_path / "work" / "env"), "/dev/fd/../environ",
                 str(tmp_path / "work" / "fds" / "0")):
        with pytest.raises(SandboxRefusal, match="read of /proc"):
            policy.open_read(path)


def test_loops_fifos_and_directories_are_errors_not_hangs(policy: SandboxPolicy, tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "loop").symlink_to("loop")
    os.mkfifo(work / "fifo")
    with pytest.raises(OSError) as loop:
        policy.open_read(str(work / "loop"))
    assert loop.value.errno == errno.ELOOP
    with pytest.raises(OSError) as fifo:
        policy.open_read(str(work / "fifo"))
    assert fifo.value.errno == errno.EINVAL
    with pytest.raises(IsADirectoryError):
        policy.open_read(str(work / "inside"))
    with pytest.raises(FileNotFoundError):
        _write(policy, work / "missing" / "x.txt", create_dirs=False)


def test_a_workspace_reached_through_a_link_is_still_the_workspace(policy: SandboxPolicy, tmp_path: Path) -> None:
    """The tool's path goes through a link to the workspace (the working directory as the user typed
    it); the check sees the real path, so the write is allowed and lands in the real workspace."""
    (tmp_path / "alias").symlink_to(tmp_path / "work")
    _write(policy, tmp_path / "alias" / "inside" / "a.txt", "a")
    assert (tmp_path / "work" / "inside" / "a.txt").read_text() == "a"
