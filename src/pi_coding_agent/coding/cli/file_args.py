"""``pi -p @notes.txt @shot.png "review"``: the ``@path`` arguments of print and JSON mode.

As in pi 1.6.0, every text file becomes a ``<file name="<absolute path>">`` block placed before the first
message, every image is attached to the first prompt (with an empty block, or the conversion hint, naming
it), empty files are skipped, and bytes that are not UTF-8 are replaced rather than refused. A missing
file or one that cannot be read stops the run before any model is asked. Unlike pi, which crashes with a
stack trace on a directory, a directory is reported as an unreadable file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.tools.images import SNIFF_BYTES, ImagePolicy, process_image, sniff_image_mime
from pi_coding_agent.coding.tools.paths import node_error_message, resolve_read_path


class FileArgError(Exception):
    """Why an ``@path`` cannot be used; ``str()`` is the line printed after ``Error: ``."""


@dataclass
class FileInput:
    """The text blocks and image attachments of every ``@path``, in argument order."""

    text: str = ""
    images: list[JsonObject] = field(default_factory=list)

    def first_messages(self, messages: list[str]) -> list[str]:
        """``messages`` with the file blocks in front of the first one (or as the only one)."""
        if not self.text:
            return list(messages)
        return [self.text + (messages[0] if messages else ""), *messages[1:]]


def expand_file_args(file_args: list[str], cwd: Path) -> FileInput:
    """Read every ``@path`` (already without its ``@``); raises ``FileArgError`` on the first bad one."""
    result = FileInput()
    for raw in file_args:
        path = os.path.abspath(resolve_read_path(raw, cwd))
        if not os.path.exists(path):
            raise FileArgError(f"File not found: {path}")
        try:
            _add_file(result, path)
        except IsADirectoryError as err:
            raise FileArgError(f"Could not read file {path}: {node_error_message(err, 'read')}") from None
        except OSError as err:
            raise FileArgError(f"Could not read file {path}: {node_error_message(err, 'open', path)}") from None
    return result


def _add_file(result: FileInput, path: str) -> None:
    with open(path, "rb") as handle:
        data = handle.read()
    if not data:
        return
    mime = sniff_image_mime(data[:SNIFF_BYTES])
    if mime is None:
        text = data.decode("utf-8", errors="replace").removeprefix("\ufeff")
        result.text += f'<file name="{path}">\n{text}\n</file>\n'
        return
    processed = process_image(data, mime, ImagePolicy(auto_resize=False))
    if processed.image is not None:
        result.images.append(dict(processed.image))
    result.text += f'<file name="{path}">{chr(10).join(processed.hints)}</file>\n'
