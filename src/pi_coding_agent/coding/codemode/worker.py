"""The codemode worker: one QuickJS VM in its own process, running one script.

It is started as a plain script (not imported from the package), so it loads only the engine and
the standard library. It speaks JSON lines: the first line on stdin is the job (code, tools,
globals, store, limits), later lines are call results; on stdout it writes ``call``, ``output``
and ``done`` messages. The host ends it by closing stdin or, to interrupt a running script (a
deadline, an abort), by killing it: the engine has no timers, file system or network, and a
process boundary is the one interrupt that works while the VM computes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

PRELUDE = Path(__file__).with_name("prelude.js")
PRELUDE_FIRST_LINE = 100_000  # the prelude is evaluated from this line on, so its stack frames are told apart


def _send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message, separators=(",", ":")) + "\n")
    sys.stdout.flush()


class _Bridge:
    """Turns the prelude's bridge calls into messages; remembers whether the script finished."""

    def __init__(self) -> None:
        self.done = False

    def __call__(self, kind: str, a: Any = None, b: Any = None, c: Any = None) -> None:
        if kind in ("call", "global"):
            _send({"type": "call", "id": a, "target": "tool" if kind == "call" else "global", "name": b, "args": c})
        elif kind == "output":
            _send({"type": "output", "kind": a, "data": b, "mimeType": c})
        elif kind == "done":
            self.done = True
            message: dict[str, Any] = {"type": "done", "ok": bool(a)}
            message["value" if a else "error"] = b
            if a:
                message["writes"] = c
            _send(message)


def _drain(context: Any, stalled: Any) -> None:
    """Run every queued promise job, then fail a script that can never resume."""
    while context.execute_pending_job():
        pass
    stalled()


def main() -> int:
    import _quickjs  # the engine loads here, in the worker only

    job = json.loads(sys.stdin.readline())
    context = _quickjs.Context()
    context.set_memory_limit(job["memoryLimitBytes"])
    context.set_max_stack_size(1024 * 1024)
    bridge = _Bridge()
    context.add_callable("__codemode_bridge", bridge)
    factory = context.eval("\n" * (PRELUDE_FIRST_LINE - 1) + PRELUDE.read_text(encoding="utf-8"))
    limits = {**job["limits"], "preludeFirstLine": PRELUDE_FIRST_LINE}
    api = factory(context.get("__codemode_bridge"), json.dumps(job["tools"]), json.dumps(job["globals"]),
                  json.dumps(job["store"]), json.dumps(limits))
    context.eval("delete globalThis.__codemode_bridge")
    method = context.eval("(api, name) => api[name].bind(api)")
    settle, stalled = method(api, "settle"), method(api, "stalled")
    try:
        method(api, "run")(job["code"])
        _drain(context, stalled)
        while not bridge.done:
            line = sys.stdin.readline()
            if not line:
                return 0
            result = json.loads(line)
            settle(result["id"], result["ok"], result.get("payload"), result.get("properties"))
            _drain(context, stalled)
    except Exception as exc:  # the engine itself failed (out of memory outside the script, a crash)
        if not bridge.done:
            _send({"type": "crash", "message": str(exc).split("\n", 1)[0]})
    return 0


if __name__ == "__main__":
    sys.exit(main())
