"""Shared fixtures."""

import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.fakes.llm_server import FakeLLMServer

Remount = Callable[[str], None]


@pytest.fixture
def fake_llm() -> Iterator[FakeLLMServer]:
    """A started scripted LLM server (see tests/fakes/llm_server.py), stopped after the test."""
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
