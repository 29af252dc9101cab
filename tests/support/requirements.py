"""What each group of tests needs from outside the Python package, and why it is missing when it is.

A group is a pytest marker (registered in pyproject.toml). conftest.py skips the marked tests whose
need is missing, with the reason, and closes the run with one line per group: how many of its tests
ran, and why the others did not. ``scripts/install_test_deps.sh`` installs every need it can reach.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from tests.support.reference_pi import REFERENCE_NODE_BIN, REFERENCE_PI, REFERENCE_ROOT

_CACHE = Path.home() / ".cache"
INSTALL = "bash scripts/install_test_deps.sh"
ACPX = Path(os.environ.get("PI_ACPX_DIR") or _CACHE / "pi-acpx") / "node_modules" / ".bin" / "acpx"
EVERYTHING = (Path(os.environ.get("PI_MCP_TEST_SERVERS") or _CACHE / "pi-mcp-test")
              / "node_modules" / ".bin" / "mcp-server-everything")
PI_ACP = Path(os.environ.get("PI_ACP_DIR") or _CACHE / "pi-acp") / "node_modules" / "pi-acp" / "dist" / "index.js"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _node() -> str | None:
    if not (REFERENCE_NODE_BIN / "node").exists():
        return f"Node.js 22 not installed at {REFERENCE_NODE_BIN} ({INSTALL})"
    return None


def _reference() -> str | None:
    if not REFERENCE_PI.exists():
        return f"reference pi 1.6.0 not installed at {REFERENCE_ROOT} ({INSTALL})"
    return _node()


def _file(path: Path, what: str) -> Callable[[], str | None]:
    return lambda: None if path.exists() else f"{what} not installed at {path} ({INSTALL})"


def _command(name: str, package: str) -> Callable[[], str | None]:
    return lambda: None if shutil.which(name) else f"{name} not on PATH (apt-get install {package}, or {INSTALL})"


def _acpx() -> str | None:
    return _file(ACPX, "acpx")() or _node()


@dataclass(frozen=True)
class Need:
    """A marker's title in the closing summary and the check that returns why it cannot run, or None."""

    title: str
    check: Callable[[], str | None]


NEEDS: dict[str, Need] = {
    "reference": Need("side-by-side with pi 1.6.0", _reference),
    "browser": Need("HTML export in chromium", lambda: None if CHROMIUM else
                    f"chromium not on PATH (apt-get install chromium, or {INSTALL})"),
    "sandbox": Need("sandbox (bubblewrap)", _command("bwrap", "bubblewrap")),
    "acpx": Need("ACP through acpx", _acpx),
    "mcp_everything": Need("MCP server-everything", _file(EVERYTHING, "@modelcontextprotocol/server-everything")),
    "pi_acp": Need("ACP adapter pi-acp", lambda: _file(PI_ACP, "pi-acp")() or _node()),
    "openssl": Need("TLS interception (openssl)", _command("openssl", "openssl")),
}


@cache
def missing(marker: str) -> str | None:
    """Why the tests marked ``marker`` cannot run here, or None when they can (checked once a process)."""
    return NEEDS[marker].check()
