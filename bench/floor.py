"""The platform's floor for a one-shot run: the least an asyncio client must do, stdlib only.

    python3 bench/floor.py BASE_URL [--tool]

Posts one streamed OpenAI chat-completions request to ``BASE_URL/v1/chat/completions`` (the fake
LLM server of the benches), prints the first streamed text at once and exits when the stream ends.
With ``--tool`` it is a tool turn: the first reply is expected to call ``bash``; the script runs the
call's command with ``bash -c`` (stdout and stderr captured), posts the second request carrying the
call and its output, and prints that reply's first text.

It is what ``bench/bench_oneshot.py`` divides our figures by (issue #40): nothing here is needed by
a real agent beyond this, so no agent can go much below it on the same interpreter.
"""

from __future__ import annotations

import asyncio
import json
import sys
from urllib.parse import urlsplit


async def post_stream(url: str, body: dict[str, object]) -> tuple[str, dict[str, str]]:
    """POST ``body``, print the first text delta as it arrives; return all text and the tool call."""
    parts = urlsplit(url)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port or 80)
    data = json.dumps(body).encode()
    writer.write(b"POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
                 b"Authorization: Bearer dummy\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"
                 % (parts.path.encode(), parts.netloc.encode(), len(data), data))
    while await reader.readline() not in (b"\r\n", b""):  # the status line and headers
        pass
    text: list[str] = []
    call = {"id": "", "name": "", "arguments": ""}
    while size := int((await reader.readline()).strip() or b"0", 16):  # chunked: one SSE event a chunk
        chunk = await reader.readexactly(size + 2)
        for line in chunk.splitlines():
            if not line.startswith(b"data: {"):
                continue
            for choice in json.loads(line[6:])["choices"]:
                delta = choice.get("delta", {})
                if delta.get("content"):
                    if not text:
                        sys.stdout.write(delta["content"] + "\n")
                        sys.stdout.flush()
                    text.append(delta["content"])
                for tool in delta.get("tool_calls") or ():
                    function = tool.get("function", {})
                    call["id"] = tool.get("id") or call["id"]
                    call["name"] = function.get("name") or call["name"]
                    call["arguments"] += function.get("arguments") or ""
    writer.close()
    return "".join(text), call


async def run(base_url: str, tool_turn: bool) -> None:
    url = base_url.rstrip("/") + "/v1/chat/completions"
    messages: list[dict[str, object]] = [{"role": "user", "content": "hello"}]
    tools = [{"type": "function", "function": {"name": "bash", "description": "Run a command",
              "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}}]
    body: dict[str, object] = {"model": "bench-model", "messages": messages, "stream": True}
    if tool_turn:
        body["tools"] = tools
    _, call = await post_stream(url, body)
    if not tool_turn:
        return
    command = json.loads(call["arguments"])["command"]
    proc = await asyncio.create_subprocess_exec("bash", "-c", command, stdin=asyncio.subprocess.DEVNULL,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    output, _ = await proc.communicate()
    messages.append({"role": "assistant", "content": None, "tool_calls": [
        {"id": call["id"], "type": "function", "function": {"name": call["name"], "arguments": call["arguments"]}}]})
    messages.append({"role": "tool", "tool_call_id": call["id"], "content": output.decode()})
    await post_stream(url, body)


if __name__ == "__main__":
    asyncio.run(run(sys.argv[1], "--tool" in sys.argv[2:]))
