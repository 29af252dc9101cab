"""Node.js and the TypeScript sidecar's runtime (jiti, TypeBox) for the tests of TypeScript extensions.

``scripts/install_test_deps.sh`` installs the runtime before the workers start; a test run without it
installs it here, once, under the lock ``_ensure_runtime`` takes (workers start together).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from functools import cache

import pytest

from pi_coding_agent.coding.extensions.typescript.host import _ensure_runtime, runtime_dir


@cache
def node_major() -> int:
    """The major version of the ``node`` on PATH, 0 without one."""
    node = shutil.which("node")
    if node is None:
        return 0
    out = subprocess.run([node, "--version"], capture_output=True, text=True, check=False).stdout
    return int(out.strip().lstrip("v").split(".")[0] or 0)


needs_node = pytest.mark.skipif(node_major() < 20, reason="Node.js >= 20 is not on PATH")


def install_or_skip() -> None:
    """The sidecar runtime in the real user cache (kept between runs), named in PI_TS_RUNTIME_DIR for
    the processes the tests start; the test skips, with why, when Node.js or npm cannot provide it."""
    if node_major() < 20:
        pytest.skip("Node.js >= 20 is not on PATH")
    directory = runtime_dir()
    os.environ["PI_TS_RUNTIME_DIR"] = str(directory)
    try:
        asyncio.run(_ensure_runtime(directory))
    except Exception as exc:  # npm unreachable: nothing here can run
        pytest.skip(f"the TypeScript sidecar runtime could not be installed: {exc}")


@pytest.fixture(scope="module", autouse=True)
def ts_runtime() -> None:
    """``install_or_skip`` once per module that imports this fixture."""
    install_or_skip()
