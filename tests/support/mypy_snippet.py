"""mypy --strict run on a snippet of host code: what it says about each line (a whole mypy run, seconds)."""

from __future__ import annotations

from pathlib import Path

from mypy import api


def mypy_notes(tmp_path: Path, source: str) -> tuple[list[tuple[int, str]], str]:
    """The (line, message) pairs mypy reports for ``source``, and its whole output for failure messages."""
    snippet = tmp_path / "snippet.py"
    snippet.write_text(source)
    out, err, _ = api.run([str(snippet), "--config-file=", "--strict", "--no-incremental", "--follow-imports=silent",
                           "--cache-dir=/dev/null"])
    notes = [(int(n), text.strip()) for n, text in (line.split(":", 2)[1:] for line in out.splitlines()
                                                      if line.startswith(str(snippet)))]
    return notes, out + err
