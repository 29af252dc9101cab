"""Where pi keeps its files and the markers it sets in its env."""

from __future__ import annotations

import os
import sys
from collections.abc import MutableMapping
from pathlib import Path

ENV_AGENT_DIR = "PI_CODING_AGENT_DIR"
ENV_SESSION_DIR = "PI_CODING_AGENT_SESSION_DIR"
CONFIG_DIR_NAME = ".pi"


def expand_tilde(path: str) -> Path:
    """``~`` and ``~/x`` expand to the home directory; other paths are taken as they are."""
    return Path(os.path.expanduser(path))


def agent_dir() -> Path:
    """``$PI_CODING_AGENT_DIR`` (``~`` expanded) or ``~/.pi/agent``."""
    configured = os.environ.get(ENV_AGENT_DIR)
    if configured:
        return expand_tilde(configured)
    return Path.home() / CONFIG_DIR_NAME / "agent"


def encode_cwd(cwd: Path | str) -> str:
    """Session folder name of a working directory: ``/home/ana/work1`` -> ``--home-ana-work1--``."""
    text = str(Path(cwd).resolve())
    if text[:1] in ("/", "\\"):
        text = text[1:]
    for sep in ("/", "\\", ":"):
        text = text.replace(sep, "-")
    return f"--{text}--"


def default_session_dir(agent: Path, cwd: Path | str) -> Path:
    """``<agentDir>/sessions/--<encoded cwd>--`` (not created here)."""
    return Path(agent).resolve() / "sessions" / encode_cwd(cwd)


def resolve_session_dir(cli_dir: str | None, setting: str | None, agent: Path, cwd: Path) -> Path:
    """--session-dir, then PI_CODING_AGENT_SESSION_DIR, then the sessionDir setting, then the default."""
    explicit = cli_dir or os.environ.get(ENV_SESSION_DIR) or setting
    if explicit:
        return (cwd / Path(explicit).expanduser()).resolve()
    return default_session_dir(agent, cwd)


def mark_environment(env: MutableMapping[str, str] | None = None) -> None:
    """Tell child processes they run under pi (inherited by every tool and shell command)."""
    target = os.environ if env is None else env
    target["AI_AGENT"] = "pi"
    target["PI_CODING_AGENT"] = "true"


def project_root() -> Path:
    """Where README.md, docs/ and examples/ are: ``PI_PACKAGE_DIR`` when set (as pi: packagers whose
    store paths read badly, Nix or Guix), else the source checkout (two levels above this package)
    when running from one, else the copy an installation puts in ``<prefix>/share``."""
    override = os.environ.get("PI_PACKAGE_DIR")
    if override:
        return Path(os.path.abspath(os.path.expanduser(override)))
    checkout = Path(__file__).resolve().parents[3]
    if (checkout / "README.md").is_file() and (checkout / "docs").is_dir():
        return checkout
    return Path(sys.prefix) / "share" / "pi-coding-agent"
