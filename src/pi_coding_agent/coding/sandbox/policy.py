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
# how bash sees a protected path: bound read-only, bound onto itself (a mount point cannot be renamed),
# or, missing, an empty read-only folder
Protection = Literal["read-only", "pinned", "empty"]
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

    def _judge_write(self, real: Path, shown: str, roots: tuple[Path, ...] | None = None) -> None:
        if self.mode == "read-only":
            raise SandboxRefusal(f"write refused by the read-only sandbox: {shown}")
        root = next((root for root in roots or self.writable() if real == root or root in real.parents), None)
        if root is None:
            raise SandboxRefusal(f"write outside the workspace refused: {shown}")
        if _protected(real.relative_to(root).parts):
            raise SandboxRefusal(f"write refused by the sandbox: {shown} (.pi, .git/hooks, .git/config and a .git "
                                 "file stay read-only: they decide what runs outside the sandbox)")

    def protected_paths(self) -> list[tuple[Path, Protection]]:
        """How ``bash`` sees what stays read-only in the workspace and each ``writableRoots`` entry:
        ``.pi``; where ``.git`` is a folder, its ``hooks`` and ``config`` (``core.hooksPath`` there
        would undo the hooks' protection), with ``.git`` itself pinned so that it cannot be renamed
        away and replaced; a ``.git`` file (a worktree's pointer) read-only."""
        if self.mode != "workspace-write":
            return []
        found: list[tuple[Path, Protection]] = []
        for root in (Path(os.path.realpath(p)) for p in (self.cwd, *self.writable_roots)):  # not the temp dir
            pi_dir, git = root / PROJECT_DIR, root / ".git"
            if os.path.exists(pi_dir) or not os.path.islink(pi_dir):  # a dangling link cannot be mounted on
                found.append((pi_dir, "read-only" if os.path.exists(pi_dir) else "empty"))
            if git.is_symlink():
                continue
            if git.is_file():
                found.append((git, "read-only"))
            elif git.is_dir():
                found += [(git, "pinned"), (git / "hooks", "read-only" if (git / "hooks").is_dir() else "empty")]
                if (git / "config").is_file():
                    found.append((git / "config", "read-only"))
        return found

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

        roots = self.writable()  # resolved once for every directory made and the file itself
        return open_file(path, flags, lambda real: self._judge_write(Path(real), path, roots), None, create_dirs)

    def parent_for_write(self, path: str, create_dirs: bool = False) -> tuple[int, str]:
        """The directory a tool replaces the file ``path`` in, and the file's name there, only if its
        real path may be written: the check and the walk one step, as ``open_write``."""
        from .files import open_parent

        roots = self.writable()
        return open_parent(path, lambda real: self._judge_write(Path(real), path, roots), create_dirs)

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


PROJECT_DIR = ".pi"  # as resources/settings.py, which this module must not import


def _protected(parts: tuple[str, ...]) -> bool:
    """A path (relative to a writable root) in a ``.pi`` folder, ``.git/hooks``, ``.git/config``, or a
    ``.git`` file (which could point git at a folder of hooks the model wrote)."""
    return PROJECT_DIR in parts or parts[-1:] == (".git",) or any(
        part == ".git" and parts[i + 1 : i + 2] in (("hooks",), ("config",)) for i, part in enumerate(parts))


def _temp_dir() -> Path:
    import tempfile  # not at start-up (it loads random and shutil): only sandboxed writes need it

    return Path(tempfile.gettempdir())


Get = Callable[[str, object], Any]
_STRICTNESS = {"off": 0, "workspace-write": 1, "read-only": 2}


def policy_from_settings(get: Get, cwd: Path, cli_mode: str | None, project_get: Get | None = None) -> SandboxPolicy:
    """The policy of ``--sandbox`` (wins) and the ``sandbox`` settings; raises ``ValueError`` on bad values.

    ``get`` reads the user's settings (and an SDK caller's overrides), ``project_get`` the project's
    file, which the model may have written under ``workspace-write``: it can only narrow. A stricter
    mode, ``network: false``, ``env: "scrub"`` and ``onRefusal: "refuse"`` apply from it; a looser
    mode, more network, ``ask`` and its ``writableRoots`` are ignored.
    """
    user = _sandbox_values(get)
    project = _sandbox_values(project_get or (lambda _key, default: default))
    mode = cli_mode or max(user["mode"] or "off", project["mode"] or "off", key=_STRICTNESS.__getitem__)
    if mode not in MODES:
        raise ValueError(f"sandbox mode must be one of {', '.join(MODES)} (got {mode!r})")
    return SandboxPolicy(
        mode=mode, cwd=cwd, writable_roots=tuple(Path(os.path.expanduser(r)).resolve() for r in user["roots"] or []),
        network=user["network"] is True and project["network"] is not False,
        scrub_env="scrub" in (user["env"], project["env"]),
        ask_on_refusal=user["refusal"] == "ask" and project["refusal"] != "refuse",
    )


def _sandbox_values(get: Get) -> dict[str, Any]:
    """The ``sandbox`` keys of one settings layer, checked; None where the layer says nothing."""
    values = {key: get(f"sandbox.{name}", None) for key, name in (
        ("mode", "mode"), ("roots", "writableRoots"), ("network", "network"), ("env", "env"),
        ("refusal", "onRefusal"))}
    if values["mode"] not in (None, *MODES):
        raise ValueError(f"sandbox mode must be one of {', '.join(MODES)} (got {values['mode']!r})")
    if not isinstance(values["roots"] or [], list) or not all(isinstance(r, str) for r in values["roots"] or []):
        raise ValueError("sandbox.writableRoots must be a list of paths")
    if (not isinstance(values["network"], bool | None) or values["env"] not in (None, "inherit", "scrub")
            or values["refusal"] not in (None, "refuse", "ask")):
        raise ValueError('sandbox.network is true or false, sandbox.env "inherit" or "scrub", '
                         'sandbox.onRefusal "refuse" or "ask"')
    return values
