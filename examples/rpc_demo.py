"""Drive ``pi --mode rpc`` through the Python client and print what the agent does.

Without arguments it needs no network and no key: it uses the scripted ``faux`` provider, whose
script (written below) makes the model create a file with the ``write`` tool, read it back and
list the folder with ``read`` and ``bash``, then answer. Everything happens in a temporary folder.

    python examples/rpc_demo.py
    ANTHROPIC_API_KEY=... python examples/rpc_demo.py --model anthropic/claude-sonnet-4-5 [--prompt "..."]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from pi_coding_agent.client import RpcClient, RpcError

FAUX_SCRIPT = [
    {"content": [
        {"type": "text", "text": "I'll create the file first."},
        {"type": "toolCall", "name": "write", "arguments": {"path": "hello.txt", "content": "Hello from pi!\n"}},
    ]},
    {"content": [
        {"type": "toolCall", "name": "read", "arguments": {"path": "hello.txt"}},
        {"type": "toolCall", "name": "bash", "arguments": {"command": "ls -l"}},
    ]},
    {"content": [{"type": "text", "text": "Done: hello.txt exists and says \"Hello from pi!\"."}]},
]
DEFAULT_PROMPT = "Create hello.txt saying hello, then check it is there."


def describe(event: dict[str, Any]) -> str | None:
    """One short line per interesting event (None hides it)."""
    kind = event["type"]
    if kind in ("message_update", "message_start", "tool_execution_update"):
        return None  # text arrives whole in message_end; a UI would render the deltas instead
    if kind == "message_end":
        message = event["message"]
        if message["role"] == "system":
            return None
        text = "".join(b.get("text", "") for b in message["content"] if b.get("type") == "text")
        reason = f" ({message['stopReason']})" if message["role"] == "assistant" else ""
        if message.get("errorMessage"):
            text = message["errorMessage"]
        return f"{kind} {message['role']}{reason}: {text.strip()[:120]!r}"
    if kind == "tool_execution_start":
        return f"{kind} {event['toolName']} {json.dumps(event['args'])}"
    if kind == "tool_execution_end":
        text = "".join(b.get("text", "") for b in event["result"]["content"] if b.get("type") == "text")
        return f"{kind} {event['toolName']} isError={event['isError']}: {text.strip()[:120]!r}"
    return kind


def run_failure(messages: list[dict[str, Any]]) -> str | None:
    """Why the run failed (the last reply's error or abort), or None when it answered."""
    last = messages[-1] if messages else None
    if last is None or last["role"] != "assistant" or last.get("stopReason") not in ("error", "aborted"):
        return None
    model = f"{last.get('provider')}/{last.get('model')}"
    return f"{model}: {last.get('errorMessage') or 'request ' + last['stopReason']}"


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--provider", help="provider of a real model (default: the scripted faux provider)")
    parser.add_argument("--model", help="model id or provider/id pattern, as for `pi --model`")
    parser.add_argument("--prompt", default=DEFAULT_PROMPT)
    options = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="pi-demo-") as workdir:
        env = dict(os.environ)
        if options.provider or options.model:
            args = [*(["--provider", options.provider] if options.provider else []),
                    *(["--model", options.model] if options.model else [])]
        else:
            script = Path(workdir, ".faux-script.json")
            script.write_text(json.dumps(FAUX_SCRIPT))
            env["PI_FAUX_SCRIPT"] = str(script)
            env["PI_CODING_AGENT_DIR"] = str(Path(workdir, ".agent"))  # leave ~/.pi alone
            args = ["--provider", "faux", "--model", "faux-1"]
        client = await RpcClient.start([*args, "--no-session"], cwd=workdir, env=env)
        try:
            state = await client.get_state()
            print(f"model: {state['model']['provider']}/{state['model']['id']}   cwd: {workdir}")
            print(f"> {options.prompt}")
            client.subscribe(lambda event: (line := describe(event)) and print(line))
            await client.prompt_and_wait(options.prompt)
            failure = run_failure(await client.get_messages())
            if failure is not None:
                print(f"error: {failure}", file=sys.stderr)
                return 1
            print(f"answer: {await client.get_last_assistant_text()}")
            print(f"files: {sorted(p.name for p in Path(workdir).iterdir() if not p.name.startswith('.'))}")
        except RpcError as err:
            print(f"error: {err}", file=sys.stderr)
            return 1
        finally:
            await client.stop()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
