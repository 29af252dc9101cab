"""pi packages: npm, git and local bundles of extensions, skills, prompt templates and themes.

``session_packages`` is the one call a start-up makes: it looks at two lists and returns None when
neither names a package, so a session without packages imports nothing of this package but this file.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pi_coding_agent.ai.types import JsonObject

if TYPE_CHECKING:
    from pi_coding_agent.coding.packages.resolve import PackageSet


def session_packages(global_data: JsonObject, project_data: JsonObject, cli_extensions: Sequence[str],
                     agent_dir: Path, cwd: Path, npm_command: Sequence[str] | None) -> PackageSet | None:
    """The packages of the settings files (``project_data`` is {} for an untrusted project) and the
    ``-e`` arguments that name packages; None when there are none."""
    cli = [(raw, "temporary") for raw in cli_extensions if is_package_argument(raw, cwd)]
    if not cli and not global_data.get("packages") and not project_data.get("packages"):
        return None
    from pi_coding_agent.coding.packages import resolve

    entries = [*cli, *resolve.configured(global_data, project_data)]
    found = resolve.resolve_packages(entries, agent_dir, cwd, npm_command)
    found.cli_arguments = [raw for raw, _ in cli]
    return found


_REMOTE_PREFIXES = ("npm:", "git:", "github:", "http:", "https:", "ssh:", "pypi:")


def is_package_argument(raw: str, cwd: Path) -> bool:
    """Whether an ``-e`` argument names a package (npm, git, or a folder with a ``package.json`` or a
    skills/prompts/themes folder) rather than one extension file or a folder of Python extensions."""
    text = raw.strip()
    if text.startswith(_REMOTE_PREFIXES):
        return True
    path = cwd / os.path.expanduser(text)
    if not os.path.isdir(path) or os.path.isfile(path / "__init__.py"):
        return False
    return os.path.isfile(path / "package.json") or any(os.path.isdir(path / t) for t in ("skills", "prompts", "themes"))
