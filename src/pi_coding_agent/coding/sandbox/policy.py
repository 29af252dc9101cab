"""What the model's tools may touch: the sandbox policy and the checks the file tools apply.

Off by default, as in pi. ``read-only`` lets the model read the project and run commands that write
nothing but a private temp dir; ``workspace-write`` adds writes under the working directory, the temp
dir and ``writableRoots``. Paths are judged after resolving symlinks, so a link in the project that
points at ``~/.ssh`` or ``/etc`` grants nothing. ``bash`` gets the same limits from the kernel
(``coding/sandbox/bwrap.py``); the checks here cover the tools that run inside this process.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pi_coding_agent.agent.tool import ToolError

SandboxMode = Literal["off", "read-only", "workspace-write"]
MODES: tuple[SandboxMode, ...] = ("off", "read-only", "workspace-write")

# Variables that carry credentials: scrubbed from the tools' environment with ``env: "scrub"``.


@functools.cache
def _secret_name() -> re.Pattern[str]:
    """Compiled on first use: only ``env: "scrub"`` needs it."""
    return re.compile(r".*(_API_KEY|_TOKEN|_SECRET|_PASSWORD|_CREDENTIALS?)$|^AWS_.*|^AZURE_.*", re.IGNORECASE)

_SECRET_NAMES = frozenset({
    "GOOGLE_APPLICATION_CREDENTIALS", "CLOUDSDK_AUTH_ACCESS_TOKEN_FILE",
    "GH_TOKEN", "GITHUB_TOKEN", "NPM_TOKEN", "HF_TOKEN", "SSH_AUTH_SOCK", "KUBECONFIG",
})


_ROOT, _PROC = Path("/"), Path("/proc")


class SandboxRefusal(ToolError):
    """An operation the active sandbox refuses; the text is what the model reads."""


@dataclass
class SandboxPolicy:
    """What the model's tools may touch: the mode, the workspace, extra writable roots, network."""

    mode: SandboxMode = "off"
    cwd: Path = field(default_factory=Path.cwd)
    writable_roots: tuple[Path, ...] = ()
    network: bool = False
    scrub_env: bool = False
    ask_on_refusal: bool = False
    temp_dir: Path | None = None  # None: the system temp dir, looked up when a write is checked
    _scratch: Path | None = field(default=None, init=False, repr=False)

    def scratch_dir(self) -> Path:
        """``read-only``'s private temp dir (commands get it as ``TMPDIR``), made on first use."""
        if self._scratch is None:
            import atexit
            import shutil
            import tempfile

            self._scratch = Path(tempfile.mkdtemp(prefix="pi-sandbox-"))
            atexit.register(shutil.rmtree, self._scratch, True)
        return self._scratch

    @property
    def active(self) -> bool:
        return self.mode != "off"

    def writable(self) -> tuple[Path, ...]:
        """Real paths writes may land under (nothing in ``read-only``)."""
        if self.mode != "workspace-write":
            return ()
        return tuple(Path(os.path.realpath(p)) for p in (self.cwd, self.temp_dir or _temp_dir(), *self.writable_roots))

    def check_write(self, path: str) -> None:
        """Refuse a file-tool write outside the writable roots (symlinks resolved): the early answer
        with the model's path; :meth:`open_write` enforces it on what is really opened."""
        if self.active:
            self._judge_write(Path(os.path.realpath(path)), path)

    def _judge_write(self, real: Path, shown: str) -> None:
        if self.mode == "read-only":
            raise SandboxRefusal(f"write refused by the read-only sandbox: {shown}")
        if not any(real == root or root in real.parents for root in self.writable()):
            raise SandboxRefusal(f"write outside the workspace refused: {shown}")

    def check_read(self, path: str, recursive: bool = False) -> None:
        """Refuse file-tool reads of ``/proc`` (or recursive searches of ``/``, which hold it): the
        agent's own process environment, with its keys, is there."""
        if self.active:
            self._judge_read(Path(os.path.realpath(path)), path, recursive)

    def _judge_read(self, real: Path, shown: str, recursive: bool = False) -> None:
        if (recursive and real == _ROOT) or real == _PROC or _PROC in real.parents:
            raise SandboxRefusal(f"read of /proc (process environments hold the agent's keys) refused by the "
                                 f"sandbox: {shown}")

    def open_write(self, path: str, flags: int, create_dirs: bool = False) -> int:
        """The file a tool writes, opened with ``flags`` only if its real path may be written, the
        check and the open one step (``files.py``): a symlink flipped meanwhile gains nothing."""
        from .files import open_file

        return open_file(path, flags, lambda real: self._judge_write(Path(real), path), None, create_dirs)

    def open_read(self, path: str) -> int:
        """The file a tool reads, opened read-only unless it or a directory on its way is in ``/proc``."""
        from .files import open_file

        def judge(real: str) -> None:
            self._judge_read(Path(real), path)

        return open_file(path, os.O_RDONLY, judge, judge)

    def tool_environment(self, env: Mapping[str, str]) -> dict[str, str]:
        """The environment commands get: credentials removed with ``env: "scrub"``."""
        if not self.scrub_env:
            return dict(env)
        return {k: v for k, v in env.items() if not (k in _SECRET_NAMES or _secret_name().match(k))}


def _temp_dir() -> Path:
    import tempfile  # not at start-up (it loads random and shutil): only sandboxed writes need it

    return Path(tempfile.gettempdir())


def policy_from_settings(get: Callable[[str, Any], Any], cwd: Path, cli_mode: str | None) -> SandboxPolicy:
    """The policy of ``--sandbox`` (wins) and the ``sandbox`` settings; raises ``ValueError`` on bad values."""
    mode = cli_mode or get("sandbox.mode", "off")
    if mode not in MODES:
        raise ValueError(f"sandbox mode must be one of {', '.join(MODES)} (got {mode!r})")
    roots = get("sandbox.writableRoots", []) or []
    if not isinstance(roots, list) or not all(isinstance(r, str) for r in roots):
        raise ValueError("sandbox.writableRoots must be a list of paths")
    network = get("sandbox.network", False)
    env = get("sandbox.env", "inherit")
    refusal = get("sandbox.onRefusal", "refuse")
    if not isinstance(network, bool) or env not in ("inherit", "scrub") or refusal not in ("refuse", "ask"):
        raise ValueError('sandbox.network is true or false, sandbox.env "inherit" or "scrub", '
                         'sandbox.onRefusal "refuse" or "ask"')
    return SandboxPolicy(
        mode=mode, cwd=cwd, writable_roots=tuple(Path(os.path.expanduser(r)).resolve() for r in roots),
        network=network, scrub_env=env == "scrub", ask_on_refusal=refusal == "ask",
    )
