"""The file tools' opens under the sandbox: the check and the open are one step.

A path checked and then opened again by name can be raced: a sandboxed command that flips a
symlink between the two gets a write outside the workspace, or a read of ``/proc/self/environ``.
Here a path is walked one component at a time from ``/``: each directory is opened with
``O_NOFOLLOW`` relative to the descriptor of the one before, and a symlink is read and followed by
this code, never by the kernel, so the real path of every directory held is known from the names
actually opened. The file's real path is judged before its last component is opened (or created)
inside the directory descriptor already held, and nothing is opened by path again. A sandboxed
command cannot move a directory out of the writable roots (everything else is read-only to it),
so a judged path stays true while the tool works on the descriptor.

When the kernel has ``openat2`` (Linux 5.6), a path with no symlink and no ``..`` under the
directory the walk starts from is opened in one call with ``RESOLVE_NO_SYMLINKS``: the kernel then
guarantees what the walk would check. Anything else (a symlink on the way, an older kernel) walks.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import stat
from collections.abc import Callable
from typing import Any, TypeVar

MAX_HOPS = 40  # symlinks followed in one path: the kernel's own limit
_DIR = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK  # a FIFO opens without blocking, then is refused

Check = Callable[[str], None]  # raises when the real path given is not allowed
_T = TypeVar("_T")


def open_file(path: str, flags: int, check: Check, passage: Check | None = None, create_dirs: bool = False) -> int:
    """A descriptor of the regular file at the absolute ``path`` opened with ``flags``.

    ``check`` judges the file's real path before it is opened, and every directory ``create_dirs``
    makes before it is made; ``passage`` judges each directory walked through (reads refuse
    ``/proc`` on the way, writes may pass anywhere). Raises what they raise, or ``OSError``.
    """
    walk = _Walk(check, passage)
    try:
        fd = _open_plain(walk.fds[0], path, flags, check, passage)
        return walk.run(path, flags, create_dirs) if fd is None else _regular(fd)
    finally:
        walk.close()


def open_parent(path: str, check: Check, create_dirs: bool = False) -> tuple[int, str]:
    """The directory that holds the file at ``path`` (every symlink followed) and the file's name in
    it, for a tool that replaces the file there (a temporary file renamed over it). ``check`` judges
    the file's real path, and every directory made, as for ``open_file``. The caller closes the
    descriptor (an ``O_PATH`` one: good for the ``*at`` calls)."""
    walk = _Walk(check, None)
    try:
        return walk.parent(path, create_dirs)
    finally:
        walk.close()


def _open_plain(root: int, path: str, flags: int, check: Check, passage: Check | None) -> int | None:
    """One ``openat2`` call when ``path`` has no ``..`` and, as the kernel makes sure, no symlink: its
    real path is then the path itself. None when the walk must do it (a symlink on the way, a
    directory to create, no ``openat2`` here)."""
    parts = _parts(path)[::-1]
    if ".." in parts or not parts or not openat2_available():
        return None
    try:
        if passage is not None:
            for end in range(1, len(parts)):
                passage("/" + "/".join(parts[:end]))
        check("/" + "/".join(parts))
    except Exception:  # the written path may still resolve to an allowed one: the walk decides
        return None
    try:
        return _openat2(root, "/".join(parts), flags | _FILE)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOENT, errno.EPERM, errno.EXDEV, errno.ENOSYS):
            return None  # the walk follows the link, makes the directories or finds the real error
        raise


_OPENAT2 = {"x86_64": 437, "aarch64": 437}  # the syscall's number where this code may call it
_RESOLVE_NO_MAGICLINKS, _RESOLVE_NO_SYMLINKS, _RESOLVE_BENEATH = 0x02, 0x04, 0x08
_openat2_state: list[bool] = []  # [available], once probed


def openat2_available() -> bool:
    """Whether this kernel has ``openat2`` (Linux 5.6+; a seccomp filter may still refuse it)."""
    if not _openat2_state:
        import platform

        available = platform.machine() in _OPENAT2
        if available:
            try:
                os.close(_openat2(os.open("/", _DIR), "", os.O_PATH | os.O_DIRECTORY, close_dir=True))
            except OSError as exc:
                available = exc.errno not in (errno.ENOSYS, errno.EPERM)
        _openat2_state.append(available)
    return _openat2_state[0]


def _openat2(dir_fd: int, relative: str, flags: int, close_dir: bool = False) -> int:
    import ctypes  # with the first sandboxed file-tool call

    syscall, open_how = _libc()
    how = open_how(flags, 0o666 if flags & os.O_CREAT else 0,
                   _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS | _RESOLVE_BENEATH)
    try:
        fd = syscall(_OPENAT2[os.uname().machine], dir_fd, os.fsencode(relative or "."), ctypes.byref(how),
                     ctypes.sizeof(how))
    finally:
        if close_dir:
            os.close(dir_fd)
    if fd < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), relative)
    return int(fd)


@functools.cache
def _libc() -> tuple[Any, Any]:
    """libc's ``syscall`` typed for ``openat2`` and the ``struct open_how`` it takes."""
    import ctypes

    class OpenHow(ctypes.Structure):
        _fields_ = (("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64))

    syscall = ctypes.CDLL(None, use_errno=True).syscall
    syscall.restype = ctypes.c_long
    syscall.argtypes = (ctypes.c_long, ctypes.c_int, ctypes.c_char_p, ctypes.POINTER(OpenHow), ctypes.c_size_t)
    return syscall, OpenHow


class _Walk:
    """The directories held so far: their descriptors and the real path their names make."""

    def __init__(self, check: Check, passage: Check | None) -> None:
        self.check = check
        self.passage = passage
        self.fds = [os.open("/", _DIR)]
        self.names: list[str] = []
        self.hops = 0

    def run(self, path: str, flags: int, create_dirs: bool) -> int:
        def final(name: str) -> int:
            return _regular(os.open(name, flags | _FILE, 0o666, dir_fd=self.fds[-1]))

        return self._walk(path, create_dirs, final)

    def parent(self, path: str, create_dirs: bool) -> tuple[int, str]:
        def final(name: str) -> tuple[int, str]:
            with contextlib.suppress(FileNotFoundError):
                if stat.S_ISLNK(os.stat(name, dir_fd=self.fds[-1], follow_symlinks=False).st_mode):
                    raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), name)  # followed by the walk
            return os.dup(self.fds[-1]), name

        return self._walk(path, create_dirs, final)

    def _walk(self, path: str, create_dirs: bool, final: Callable[[str], _T]) -> _T:
        """Hold each directory of ``path`` in turn, then hand its last component to ``final`` once its
        real path is judged (``final`` raising ``ELOOP`` means: a symlink, follow it)."""
        pending = _parts(path)  # reversed: the next component is last
        while pending:
            name = pending.pop()
            if name == "..":
                self._up()
                continue
            real = "/" + "/".join([*self.names, name])
            if any(p != ".." for p in pending):  # a directory on the way
                self._enter(name, real, pending, create_dirs)
                continue
            if pending:  # only ``..`` follows: the result is a directory the walk holds
                self._enter(name, real, pending, False)
                continue
            self.check(real)
            try:
                return final(name)
            except OSError as exc:
                if exc.errno != errno.ELOOP:
                    raise
                self._follow(name, exc, pending)
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)

    def _enter(self, name: str, real: str, pending: list[str], create: bool) -> None:
        if self.passage is not None:
            self.passage(real)
        try:
            fd = os.open(name, _DIR, dir_fd=self.fds[-1])
        except FileNotFoundError:
            if not create:
                raise
            self.check(real)
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, dir_fd=self.fds[-1])
            self._hop(name)  # opened on the next turn (a race that keeps removing it ends as ELOOP)
            pending.append(name)
            return
        except OSError as exc:
            if exc.errno not in (errno.ENOTDIR, errno.ELOOP):
                raise
            self._follow(name, exc, pending)
            return
        self.fds.append(fd)
        self.names.append(name)

    def _follow(self, name: str, error: OSError, pending: list[str]) -> None:
        """Continue with the target of the symlink ``name`` (re-read if it changed meanwhile)."""
        try:
            target = os.readlink(name, dir_fd=self.fds[-1])
        except OSError as exc:
            if exc.errno != errno.EINVAL:
                raise
            if error.errno != errno.ELOOP:
                raise error from None  # not a link: a file where a directory was expected
            target = name  # flipped back to a file between the open and here: open it again
        self._hop(name)
        if target.startswith("/"):
            while self.names:
                self._up()
        pending.extend(_parts(target))

    def _hop(self, name: str) -> None:
        self.hops += 1
        if self.hops > MAX_HOPS:
            raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), name)

    def _up(self) -> None:
        if self.names:
            self.names.pop()
            os.close(self.fds.pop())

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)
        self.fds = []


def _parts(path: str) -> list[str]:
    return [part for part in reversed(path.split("/")) if part not in ("", ".")]


def _regular(fd: int) -> int:
    """``fd`` made blocking again when it is a regular file; closed and refused otherwise."""
    mode = os.fstat(fd).st_mode
    if stat.S_ISREG(mode):
        os.set_blocking(fd, True)
        return fd
    os.close(fd)
    code = errno.EISDIR if stat.S_ISDIR(mode) else errno.EINVAL
    raise OSError(code, os.strerror(code))
