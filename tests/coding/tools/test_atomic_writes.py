"""edit and write replace a file at once: a full disk leaves the old content whole (issue 33, item 7).

Real files on a real 1 MiB tmpfs (see the ``tmpfs`` fixture; skipped unless root can mount), filled
until the new content no longer fits.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from pi_coding_agent.agent.tool import ToolError, ToolResult
from pi_coding_agent.ai.abort import AbortSignal
from pi_coding_agent.ai.atomic_file import write_atomic
from pi_coding_agent.coding.tools.base import ToolEnv
from pi_coding_agent.coding.tools.builtin import create_builtin_tools
from tests.conftest import Remount

OLD = "".join(f"line {n:06d} of the original text\n" for n in range(6000))  # ~200 KB


async def run(cwd: Path, name: str, **params: Any) -> ToolResult:
    tool = create_builtin_tools(ToolEnv(cwd=cwd))[name]
    return await tool.execute("t", tool.prepare_arguments(params), AbortSignal(), lambda _: None)


def _fill(directory: Path, leave: int) -> Path:
    """Fill ``directory``'s file system until about ``leave`` bytes are free; the filler file."""
    stat = os.statvfs(directory)
    filler = directory / "filler"
    filler.write_bytes(b"\0" * max(0, stat.f_bavail * stat.f_frsize - leave))
    return filler


@pytest.mark.parametrize("tool", ["edit", "write"])
async def test_a_full_disk_leaves_the_file_whole(tmpfs: tuple[Path, Remount], tool: str) -> None:
    mount = tmpfs[0]
    target = mount / "big.txt"
    target.write_text(OLD)
    target.chmod(0o640)
    os.chown(target, 1234, 2345)
    filler = _fill(mount, leave=64 * 1024)
    new = OLD.replace("original", "edited")
    params: dict[str, Any] = (
        {"edits": [{"oldText": "line 000000 of the original", "newText": "line 000000 of the edited"}]}
        if tool == "edit" else {"content": new})
    with pytest.raises(ToolError, match="ENOSPC"):
        await run(mount, tool, path="big.txt", **params)
    assert target.read_text() == OLD
    assert sorted(p.name for p in mount.iterdir()) == ["big.txt", "filler"]  # no temporary file left
    filler.unlink()
    await run(mount, tool, path="big.txt", **params)
    assert target.read_text().startswith("line 000000 of the edited")
    status = target.stat()
    assert (status.st_mode & 0o7777, status.st_uid, status.st_gid) == (0o640, 1234, 2345)


@pytest.mark.parametrize("tool", ["edit", "write"])
async def test_a_symlinked_file_is_written_through_its_link(tmp_path: Path, tool: str) -> None:
    real = tmp_path / "dotfiles" / "real.txt"
    real.parent.mkdir()
    real.write_text("alpha\n")
    (tmp_path / "link.txt").symlink_to(real)
    params: dict[str, Any] = ({"edits": [{"oldText": "alpha", "newText": "beta"}]} if tool == "edit"
                              else {"content": "beta\n"})
    await run(tmp_path, tool, path="link.txt", **params)
    assert (tmp_path / "link.txt").is_symlink() and real.read_text() == "beta\n"


def test_write_atomic_creates_a_dangling_links_target_and_refuses_a_loop(tmp_path: Path) -> None:
    link = tmp_path / "settings.json"
    link.symlink_to(tmp_path / "store" / "settings.json")
    (tmp_path / "store").mkdir()
    write_atomic(link, b"{}")
    assert link.is_symlink() and (tmp_path / "store" / "settings.json").read_bytes() == b"{}"
    loop = tmp_path / "loop.json"
    loop.symlink_to(loop)
    with pytest.raises(OSError, match="Too many levels of symbolic links"):
        write_atomic(loop, b"{}")
    assert loop.is_symlink()


def test_write_atomic_keeps_a_read_only_file(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root may write any file")
    target = tmp_path / "ro.txt"
    target.write_text("kept")
    target.chmod(0o444)
    with pytest.raises(PermissionError):
        write_atomic(target, b"replaced")
    assert target.read_text() == "kept"


async def test_a_read_only_mount_is_named(tmpfs: tuple[Path, Remount]) -> None:
    mount, remount = tmpfs
    (mount / "f.txt").write_text("alpha\n")
    remount("ro")
    with pytest.raises(ToolError, match=r"^EROFS: read-only file system, open "):
        await run(mount, "write", path="f.txt", content="beta\n")
    assert (mount / "f.txt").read_text() == "alpha\n"
