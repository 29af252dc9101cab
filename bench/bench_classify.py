"""codemode ``models.classify()``, side by side with the reference pi 1.6.0: what one classifier call
costs on top of the service, sequentially and with the script's four concurrent calls.

Each side runs ``pi --mode rpc`` with the fake LLM calling ``codemode`` and models.json sending the
``typesafe`` provider to the fake System One service (``tests/support/fakes/nonchat_server.py``, which
answers at once), so the time is the implementation's: script call, credentials, request, parsing.

* sequential: a script of 40 ``classify()`` calls one after another, minus an empty script, per call;
* parallel: the same 40 calls through ``Promise.all`` (four in flight), per call.

    .venv/bin/python bench/bench_classify.py [--runs 5]
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from common import ROOT, Row, run_bench

sys.path.insert(0, str(ROOT))
from tests.support.fakes.llm_server import FakeLLMServer
from tests.support.fakes.nonchat_server import FakeNonChatServer
from tests.support.reference_pi import REFERENCE_PI
from tests.support.rpc_compare import Workspace

CALLS = 40
CALL = ('models.classify(jev, { state: { i }, questions: { ok: { type: "bool", instructions: "Fine?", '
        'criteria: { true: "yes", false: "no" } } } })')
HEAD = 'const jev = await models.getModelOfType("classifier", "typesafe", "jev-latest");\n'
SCRIPTS = {
    "empty": HEAD + "return 1",
    "sequential": HEAD + f"for (let i = 0; i < {CALLS}; i++) await {CALL};",
    "parallel": HEAD + f"await Promise.all(Array.from({{ length: {CALLS} }}, (_, i) => {CALL}));",
}


async def measure(kind: str, runs: int, root: Path) -> dict[str, float]:
    """Median ``durationMs`` of each script kind over ``runs`` rounds on one side."""
    with FakeLLMServer() as llm, FakeNonChatServer() as service:
        order = [name for _ in range(runs) for name in SCRIPTS]
        for index, name in enumerate(order):
            llm.add({"content": [{"type": "toolCall", "id": f"{name}{index}", "name": "codemode",
                                  "arguments": {"code": SCRIPTS[name]}}]},
                    {"content": [{"type": "text", "text": "ok"}]})
        workspace = Workspace.create(root / kind, llm.url, {"defaultTools": ["+codemode"]})
        path = workspace.agent_dir / "models.json"
        config: dict[str, Any] = json.loads(path.read_text())
        config["providers"]["typesafe"] = {"baseUrl": f"{service.url}/ts", "apiKey": "bench"}
        path.write_text(json.dumps(config))
        proc = await workspace.spawn(kind, "--no-session")
        spans: dict[str, list[float]] = {name: [] for name in SCRIPTS}
        try:
            for index, name in enumerate(order):
                await proc.send({"type": "prompt", "message": "go", "id": f"p{index}"})
                records = await proc.read_until(lambda r: r["type"] == "agent_settled")
                end = next(r for r in records if r["type"] == "tool_execution_end" and r["toolName"] == "codemode")
                spans[name].append(float(end.get("durationMs") or _wall_ms(end)))
        finally:
            await proc.kill()
    empty = statistics.median(spans["empty"])
    return {name: (statistics.median(spans[name]) - empty) / CALLS for name in ("sequential", "parallel")}


def _wall_ms(end: dict[str, Any]) -> float:
    """The script's wall time from its result text (``Wall time N.N seconds``) when no duration is sent."""
    text = end["result"]["content"][0]["text"]
    return float(text.split("Wall time ", 1)[1].split(" ", 1)[0]) * 1000


async def results(runs: int) -> list[Row]:
    with tempfile.TemporaryDirectory() as tmp:
        ours = await measure("ours", runs, Path(tmp))
        ref = await measure("reference", runs, Path(tmp)) if REFERENCE_PI.exists() else None
    return [Row("classify", f"per call, {name}", "ms", ours[name], ref[name] if ref else None)
            for name in ("sequential", "parallel")]


if __name__ == "__main__":
    run_bench(__doc__, results, default_runs=5)
