"""What the editor offers to complete: ``/commands`` and ``@files`` (pure functions and a file index).

Files come from ``rg --files`` (the ripgrep the tools use), which honours ``.gitignore`` and skips
hidden files; the list is read once in a thread, on the first ``@``.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
from pathlib import Path

MAX_ITEMS = 12
MAX_FILES = 50_000

Candidate = tuple[str, str]  # (text to insert, description shown beside it)


def fuzzy_score(query: str, text: str) -> int | None:
    """None unless ``query``'s characters occur in order in ``text`` (case-insensitive); lower is better:
    a prefix of the file name beats a prefix of the path, which beats a scattered match."""
    q, t = query.lower(), text.lower()
    position = 0
    for ch in q:
        position = t.find(ch, position) + 1
        if position == 0:
            return None
    name = t.rsplit("/", 1)[-1]
    if name.startswith(q):
        return len(t)
    if q in t:
        return 1000 + len(t)
    return 2000 + len(t)


def command_candidates(prefix: str, commands: list[Candidate]) -> list[Candidate]:
    """``/mo`` -> the commands whose names start with (or fuzzily contain) ``mo``."""
    word = prefix[1:]
    scored = [(score, name, description) for name, description in commands
              if (score := (0 if name.startswith(word) else fuzzy_score(word, name))) is not None]
    scored.sort(key=lambda item: (item[0], item[1]))
    return [(f"/{name}", description) for _, name, description in scored[:MAX_ITEMS]]


_AT_TOKEN = re.compile(r"(?:^|\s)@(\S*)$")


def at_token(text_before_cursor: str) -> str | None:
    """The partial path after an ``@`` that the cursor ends (None when not completing a file)."""
    match = _AT_TOKEN.search(text_before_cursor)
    return None if match is None else match.group(1)


def file_candidates(query: str, files: list[str]) -> list[Candidate]:
    scored = [(score, path) for path in files if (score := fuzzy_score(query, path)) is not None] if query else \
        [(len(path), path) for path in files]
    scored.sort()
    return [(path, "") for _, path in scored[:MAX_ITEMS]]


class FileIndex:
    """The project's files (relative paths), listed once by ripgrep."""

    def __init__(self, cwd: Path, rg: str | None) -> None:
        self.cwd = cwd
        self.rg = rg
        self.files: list[str] | None = None
        self._loading: asyncio.Task[None] | None = None

    def ensure_loading(self) -> asyncio.Task[None]:
        if self._loading is None:
            self._loading = asyncio.create_task(self._load())
        return self._loading

    async def _load(self) -> None:
        self.files = await asyncio.to_thread(self._list)

    def _list(self) -> list[str]:
        if self.rg is None:
            return []
        try:
            done = subprocess.run([self.rg, "--files", "--no-messages"], cwd=self.cwd, capture_output=True,
                                  timeout=10, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return []
        return sorted(done.stdout.decode(errors="replace").splitlines()[:MAX_FILES])
