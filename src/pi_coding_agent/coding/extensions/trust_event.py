"""``project_trust``: user and ``-e`` extensions decide whether a project's resources load.

pi asks before the project's own extensions can exist, so only the user's extensions (agent dir)
and the command line's take part. Here trust is decided before the session is built, so those
extensions are imported and their ``setup`` runs once against a ``pi`` that only records
``project_trust`` handlers (every other call does nothing); the session's load then reuses the
imported modules and runs ``setup`` for real. The first handler answering ``{"trusted": "yes"}``
or ``"no"`` decides (``"undecided"`` passes on; a raising handler is reported on stderr and passes
on), ``"remember": True`` saves the decision in trust.json. Without an answer the usual order
applies (``resources/trust.py``). Handlers get ``event = {type, cwd}`` and a ``ctx`` with ``cwd``,
``mode``, ``has_ui`` (False: nothing can be answered before the protocol runs) and ``ui``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pi_coding_agent.agent.awaitables import maybe_await
from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.extensions.loader import ExtensionSource, hand_over, import_extension
from pi_coding_agent.coding.resources.trust import save_trust_decision
from pi_coding_agent.coding.ui import NoUI

if TYPE_CHECKING:
    from types import ModuleType

Handler = Callable[[JsonObject, object], Any]


class _Recorder:
    """The ``pi`` of the trust pass: ``on("project_trust", ...)`` is kept, everything else is ignored."""

    def __init__(self) -> None:
        self.handlers: list[tuple[str, Handler]] = []
        self.path = ""

    def on(self, event: str, handler: Handler) -> Callable[[], None]:
        if event == "project_trust":
            self.handlers.append((self.path, handler))
        return lambda: None

    def __getattr__(self, name: str) -> object:
        return _ignored


class _Ignored:
    """Whatever else ``setup`` touches in the trust pass: callable, awaitable, attribute of itself."""

    def __call__(self, *args: object, **kwargs: object) -> _Ignored:
        return self

    def __getattr__(self, name: str) -> _Ignored:
        return self

    def __await__(self) -> object:
        return iter(())

    def __bool__(self) -> bool:
        return False


_ignored = _Ignored()


class TrustContext:
    """``ctx`` of ``project_trust`` handlers."""

    def __init__(self, cwd: Path, mode: str) -> None:
        self.cwd, self.mode = str(cwd), mode
        self.ui = NoUI()
        self.has_ui = False


async def decide_trust(sources: Sequence[ExtensionSource], cwd: Path, mode: str, agent_dir: Path) -> bool | None:
    """The extensions' decision for ``cwd`` (None: nobody decided)."""
    recorder = _Recorder()
    for source in sources:
        recorder.path = str(source.path)
        try:
            module: ModuleType | None = None if source.setup is not None else import_extension(source.path)
            setup = module.setup if module is not None else source.setup
            if setup is not None:
                await maybe_await(setup(recorder))
        except Exception:  # the session's load reports it
            continue
        if module is not None:
            hand_over(source.path, module)
    event = {"type": "project_trust", "cwd": str(cwd)}
    for path, handler in recorder.handlers:
        try:
            result = await maybe_await(handler(dict(event), TrustContext(cwd, mode)))
        except Exception as exc:
            print(f'Extension "{path}" project_trust error: {exc}', file=sys.stderr)
            continue
        answer = result.get("trusted") if isinstance(result, dict) else None
        if answer in ("yes", "no"):
            if result.get("remember") is True:
                save_trust_decision(agent_dir, cwd, answer == "yes")
            return answer == "yes"
    return None
