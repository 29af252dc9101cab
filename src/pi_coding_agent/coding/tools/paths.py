"""Path arguments as models write them: a stray leading ``@``, ``~``, odd Unicode spaces, relative paths."""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path


@functools.cache
def _unicode_spaces() -> re.Pattern[str]:
    """Compiled on first use (with ``_am_pm``): the tools module loads at start-up, paths come later."""
    return re.compile("[\u00a0\u2000-\u200a\u202f\u205f\u3000]")


@functools.cache
def _am_pm() -> re.Pattern[str]:
    return re.compile(r" (AM|PM)\.", re.IGNORECASE)


def normalize_path_arg(raw: str) -> str:
    """Normalise spaces, drop one leading ``@``, expand ``~`` and ``file://`` URLs."""
    text = _unicode_spaces().sub(" ", raw)
    if text.startswith("@"):
        text = text[1:]
    if text == "~":
        return os.path.expanduser("~")
    if text.startswith("~/"):
        return os.path.join(os.path.expanduser("~"), text[2:])
    if text.startswith("file://"):
        from urllib.parse import unquote, urlparse

        return unquote(urlparse(text).path)
    return text


def resolve_to_cwd(raw: str, cwd: Path | str) -> str:
    """Absolute, normalised (not symlink-resolved) path of a tool's path argument."""
    return os.path.normpath(os.path.join(cwd, normalize_path_arg(raw)))


def resolve_read_path(raw: str, cwd: Path | str) -> str:
    """Like :func:`resolve_to_cwd`, then try the macOS screenshot name variants if it is missing."""
    resolved = resolve_to_cwd(raw, cwd)
    if os.path.exists(resolved):
        return resolved
    import unicodedata  # a 1 MB extension module: mapped by the first missing path, not at start-up

    nfd = unicodedata.normalize("NFD", resolved)
    variants = (
        _am_pm().sub("\u202f\\1.", resolved),
        nfd,
        resolved.replace("'", "\u2019"),
        nfd.replace("'", "\u2019"),
    )
    for variant in variants:
        if variant != resolved and os.path.exists(variant):
            return variant
    return resolved


_LIBUV_MESSAGES = {
    "ENOENT": "no such file or directory",
    "EACCES": "permission denied",
    "EPERM": "operation not permitted",
    "ENOTDIR": "not a directory",
    "EISDIR": "illegal operation on a directory",
    "ELOOP": "too many symbolic links encountered",
    "ENAMETOOLONG": "name too long",
}


def node_error_message(error: OSError, syscall: str, path: str | None = None) -> str:
    """An OS error in Node's wording (``ENOENT: no such file or directory, access '<path>'``)."""
    code = error_code(error)
    message = _LIBUV_MESSAGES.get(code) or (error.strerror or str(error)).lower()
    suffix = f" '{path}'" if path is not None else ""
    return f"{code}: {message}, {syscall}{suffix}"


def error_code(error: OSError) -> str:
    import errno

    return errno.errorcode.get(error.errno or 0, "EIO")
