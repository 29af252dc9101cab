"""The codemode worker: one QuickJS VM in its own process, running one script.

It is started as a plain script with ``-S`` (not imported from the package) and imports nothing
but the engine: under load, importing ``json`` or ``pathlib`` cost more than the engine itself.
It moves lines: the first line on stdin is the job (JSON, decoded inside the VM), later lines are
call results; the prelude builds every line written to stdout (``call``, ``output``, ``done``).
The host ends the worker by closing stdin or, to interrupt a running script (a deadline, an abort),
by killing it: the engine has no timers, file system or network, and a process boundary is the one
interrupt that works while the VM computes.

``argv``: the directory holding the engine module, the VM memory limit in bytes.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # importing typing costs this process more than the engine does
if TYPE_CHECKING:
    from typing import Any

PRELUDE_FIRST_LINE = 100_000  # the prelude is evaluated from this line on, so its stack frames are told apart


class _Bridge:
    """Writes the prelude's message lines; remembers whether the script finished."""

    def __init__(self) -> None:
        self.done = False

    def __call__(self, kind: str, line: str) -> None:
        self.done = self.done or kind == "done"
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def main() -> int:
    sys.path[:0] = sys.argv[1:2]
    import _quickjs  # the engine loads here, in the worker only

    context = _quickjs.Context()
    context.set_memory_limit(int(sys.argv[2]))
    context.set_max_stack_size(1024 * 1024)
    bridge = _Bridge()
    context.add_callable("__codemode_bridge", bridge)
    with open(__file__.rpartition("/")[0] + "/prelude.js", encoding="utf-8") as handle:
        factory = context.eval("\n" * (PRELUDE_FIRST_LINE - 1) + handle.read())
    job = sys.stdin.readline()
    api = factory(context.get("__codemode_bridge"), job.rstrip("\n"))
    context.eval("delete globalThis.__codemode_bridge")
    method = context.eval("(api, name) => api[name].bind(api)")
    deliver, stalled = method(api, "deliver"), method(api, "stalled")
    try:
        method(api, "run")()
        _drain(context, stalled)
        while not bridge.done:
            line = sys.stdin.readline()
            if not line:
                return 0
            deliver(line)
            _drain(context, stalled)
    except Exception as exc:  # the engine itself failed (out of memory outside the script, a crash)
        if not bridge.done:
            bridge("crash", '{"type":"crash","message":' + _json_string(str(exc).split("\n", 1)[0]) + "}")
    return 0


def _json_string(text: str) -> str:
    """A JSON string literal without the json module (printable text; others become spaces)."""
    clean = "".join(c if c >= " " else " " for c in text).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{clean}"'


def _drain(context: Any, stalled: Any) -> None:
    """Run every queued promise job, then fail a script that can never resume."""
    while context.execute_pending_job():
        pass
    stalled()


if __name__ == "__main__":
    sys.exit(main())
