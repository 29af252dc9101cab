"""What the front ends do to start fast: ``inspect`` on first use, asyncio without ``ssl``, and no
garbage collection while the start-up imports and builds.

``inspect`` (with ``ast`` and ``dis``: about 24 M instructions, a fifteenth of a start) is imported
by asyncio and dataclasses, which only call it in paths a start-up does not take (a dataclass
without a docstring, a non-coroutine awaitable, ``loop.add_signal_handler``). The ``pi`` entry point
(``__main__``) puts a stand-in in ``sys.modules`` before anything imports it; the first attribute read, from any thread, imports
the real module under a lock and the stand-in takes over all its names.

asyncio imports ``ssl`` as it loads, which maps OpenSSL: about 6 MiB of resident memory and a few
milliseconds of every start, though TLS is only needed by the first ``https://`` request (whose HTTP
stack imports ``ssl`` anyway). asyncio treats a missing ``ssl`` as "no TLS support", so the front
ends import it while ``ssl`` is marked missing, then watch for the first real ``import ssl`` and give
the module to the asyncio modules that keep a reference, as if they had imported it themselves.

Start-up allocates many objects and frees few; the collector's passes over them find nothing, so it
pauses until the session is built, and what start-up made is then moved out of its sight
(``gc.freeze``), which also keeps later full collections short.

Only the ``pi`` process does this (``cli`` and the modes call it); an SDK user's process is left alone.
"""

from __future__ import annotations

import gc
import importlib
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib.machinery import ModuleSpec, PathFinder
from types import ModuleType

# asyncio modules that bind ``ssl`` at import time (``try: import ssl except ImportError: ssl = None``)
_HOLDERS = ("asyncio.base_events", "asyncio.selector_events", "asyncio.sslproto")


def defer_module(name: str) -> None:
    """Make ``import name`` cheap until the module is used (a no-op once it is loaded)."""
    if name not in sys.modules:
        stand_in = _Deferred(name)
        stand_in.__spec__ = PathFinder.find_spec(name)  # what importlib.util.find_spec(name) reports meanwhile
        sys.modules[name] = stand_in


class _Deferred(ModuleType):
    """Stands for a module until its first attribute read; then imports it and adopts its names, so
    later reads are plain attribute lookups and every holder of the stand-in sees the real module."""

    _lock = threading.RLock()

    def __getattr__(self, attr: str) -> object:
        with _Deferred._lock:
            if sys.modules.get(self.__name__) is self:
                del sys.modules[self.__name__]
                try:
                    real = importlib.import_module(self.__name__)
                except BaseException:
                    sys.modules[self.__name__] = self
                    raise
                self.__dict__.update(real.__dict__)
        return object.__getattribute__(self, attr)


def import_asyncio_without_ssl() -> None:
    """Import asyncio with ``ssl`` deferred; a no-op when either is already loaded."""
    if "asyncio" in sys.modules or "ssl" in sys.modules:
        return
    sys.modules["ssl"] = None  # type: ignore[assignment]  # makes ``import ssl`` raise ImportError
    try:
        import asyncio  # noqa: F401
    finally:
        del sys.modules["ssl"]
    sys.meta_path.insert(0, _SslWatcher())


@contextmanager
def collector_paused() -> Iterator[None]:
    """No garbage collection inside; afterwards, everything allocated so far is frozen (never scanned)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()


def hand_over(ssl: ModuleType) -> None:
    """Give the freshly imported ``ssl`` to the asyncio modules that were loaded without it."""
    for name in _HOLDERS:
        module = sys.modules.get(name)
        if module is not None and getattr(module, "ssl", False) is None:
            module.ssl = ssl  # type: ignore[attr-defined]
    sslproto = sys.modules.get("asyncio.sslproto")
    if sslproto is not None and not hasattr(sslproto, "SSLAgainErrors"):
        sslproto.SSLAgainErrors = (ssl.SSLWantReadError, ssl.SSLSyscallError)  # type: ignore[attr-defined]


class _SslWatcher:
    """A meta path finder (not derived from ``importlib.abc``, whose import loads ``tempfile``): finds
    ``ssl`` as the normal path finder does, and runs ``hand_over`` once the module has executed."""

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        if fullname != "ssl":
            return None
        sys.meta_path.remove(self)
        spec = PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        execute = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            execute(module)
            hand_over(module)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec
