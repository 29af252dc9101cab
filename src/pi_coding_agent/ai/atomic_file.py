"""Replace a file's content all at once, so that a full disk or a crash never leaves it half written.

The new content goes to a temporary file beside the target, is flushed to the disk (``fsync``) and
renamed over the target: a reader sees the old content or the new one, never a mixture. The target
keeps its mode (and, where permitted, its owner). A symlink is written through: its final target
is replaced, so a link a dotfile manager (stow, chezmoi, home-manager) made stays a link; a
dangling link's target is created. A symlink loop is refused with ``ELOOP``, a directory with
``EISDIR``, a file its mode makes read-only with ``EACCES`` (as writing it in place would be).

Replacing gives the file a new inode: other hard links to it keep the old content (git and SQLite's
rollback journal make the same trade). Where the directory refuses new files but the file itself
is writable, the file is written in place, the one case without the guarantee.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterable
from typing import BinaryIO

_TEMP_ATTEMPTS = 100


def describe_os_error(error: OSError) -> str:
    """``ENOSPC: No space left on device``: the code a user can search for, and its text."""
    code = errno.errorcode.get(error.errno or 0)
    text = error.strerror or str(error)
    return f"{code}: {text}" if code else text


def link_target(path: str | os.PathLike[str]) -> str:
    """The file a write to ``path`` must replace: ``path`` with every symlink followed (the target of
    a dangling link is returned even though it does not exist)."""
    real = os.path.realpath(path)
    if os.path.islink(real):  # realpath stops, leaving a link, only in a loop
        raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), os.fspath(path))
    return real


def create_new(path: str | os.PathLike[str], data: bytes, mode: int) -> bool:
    """Create ``path`` holding ``data`` unless something is there (a file, or any link: a dangling
    one is not followed); whether it did."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
    except FileExistsError:
        return False
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    return True


def write_atomic(path: str | os.PathLike[str], data: bytes | Iterable[bytes], mode: int = 0o644) -> None:
    """Replace the content of ``path`` (through symlinks) by ``data`` (or its pieces, in order).

    ``mode`` applies when the file is new; an existing file keeps its own mode and owner. Raises the
    ``OSError`` of the failing step; the target is then untouched and no temporary file is left.
    """
    dir_fd, name = directory_of(path)
    try:
        replace_at(dir_fd, name, data, mode)
    finally:
        os.close(dir_fd)


def directory_of(path: str | os.PathLike[str]) -> tuple[int, str]:
    """The directory holding the file ``path`` names (its symlinks followed), as an ``O_PATH``
    descriptor for the ``*at`` calls, and the file's name in it. The caller closes it."""
    directory, name = os.path.split(link_target(path))
    return os.open(directory or ".", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC), name


def replace_at(dir_fd: int, name: str, data: bytes | Iterable[bytes], mode: int = 0o644) -> None:
    """``write_atomic`` for the file ``name`` in the directory ``dir_fd``, with nothing opened by path:
    a caller that judged the directory (the sandbox's checked walk) keeps that judgement. ``name`` is
    replaced as it is, never followed: a symlink there is replaced, not written through."""
    existing = _existing(dir_fd, name)
    try:
        fd, temp = _open_temp(dir_fd, name, mode if existing is None else 0o600)  # the kernel applies the umask
    except PermissionError:
        if existing is None:
            raise
        _write_in_place(dir_fd, name, data)
        return
    try:
        with os.fdopen(fd, "wb") as handle:
            _write_pieces(handle, data)
            if existing is not None:
                _copy_metadata(handle.fileno(), existing)
            os.fsync(handle.fileno())
        os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=dir_fd)
        raise
    _sync_directory(dir_fd)


def _existing(dir_fd: int, name: str) -> os.stat_result | None:
    """The target's status (None when it does not exist); refuses what may not be replaced."""
    try:
        existing = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if stat.S_ISDIR(existing.st_mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), name)
    if stat.S_ISLNK(existing.st_mode):
        return None  # put there since the caller followed it: replaced as a new file, its mode not copied
    os.close(os.open(name, os.O_WRONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd))  # EACCES...
    return existing


def _write_in_place(dir_fd: int, name: str, data: bytes | Iterable[bytes]) -> None:
    fd = os.open(name, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    with os.fdopen(fd, "wb") as handle:
        _write_pieces(handle, data)
        os.fsync(handle.fileno())


def _write_pieces(handle: BinaryIO, data: bytes | Iterable[bytes]) -> None:
    for piece in [data] if isinstance(data, bytes) else data:
        handle.write(piece)
    handle.flush()


def _open_temp(dir_fd: int, name: str, mode: int) -> tuple[int, str]:
    """A new, empty file beside ``name`` (same directory, so the rename stays on one file system)."""
    for attempt in range(_TEMP_ATTEMPTS):
        temp = f".{name}.{os.getpid()}.{attempt}.tmp"
        try:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            return os.open(temp, flags, mode, dir_fd=dir_fd), temp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary file name", name)


def _copy_metadata(fd: int, existing: os.stat_result) -> None:
    """The replaced file's mode and owner (the owner only when allowed: root, or the same owner)."""
    with contextlib.suppress(PermissionError):
        os.fchown(fd, existing.st_uid, existing.st_gid)
    os.fchmod(fd, existing.st_mode & 0o7777)


def _sync_directory(dir_fd: int) -> None:
    """Make the rename itself durable (best effort: some file systems refuse to open a directory)."""
    with contextlib.suppress(OSError):
        fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=dir_fd)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
