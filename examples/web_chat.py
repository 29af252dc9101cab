"""A web chat on the Python SDK: one agent session per browser tab, its events streamed over a WebSocket.

Each WebSocket connection (one per open tab) gets its own session from ``create_agent_session``,
closed when the tab goes away; a message ``{"prompt": "..."}`` runs that prompt with
``session.stream`` and every event goes to the page as it happens. The page shows the streamed
text and the tools the agent runs. Starlette and uvicorn come with the ``examples`` extra
(``pip install -e '.[examples]'``).

Without arguments it needs no network and no key: the scripted ``faux`` provider echoes, in a
temporary folder. With ``--model`` (and the provider's key in the environment) it is a real agent
working in ``--cwd``:

    python examples/web_chat.py                      # then open http://127.0.0.1:8000
    ANTHROPIC_API_KEY=... python examples/web_chat.py --model anthropic/claude-sonnet-4-5 --cwd .
"""

from __future__ import annotations

import argparse
import json
import tempfile
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from pi_coding_agent import PiError, create_agent_session

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>pi web chat</title>
<style>
body { font: 15px system-ui, sans-serif; max-width: 46rem; margin: 2rem auto; }
#log div { margin: .4rem 0; white-space: pre-wrap; }
.user { font-weight: 600; } .tool { color: #666; font-family: monospace; } .error { color: #b00; }
form { display: flex; gap: .5rem; } input { flex: 1; padding: .4rem; }
</style></head>
<body>
<div id="log"></div>
<form id="ask"><input id="prompt" autocomplete="off" placeholder="Ask the agent"><button>Send</button></form>
<script>
const log = document.getElementById("log");
const socket = new WebSocket(`ws://${location.host}/ws`);
let reply = null;
function line(cls, text) {
  const div = document.createElement("div");
  div.className = cls;
  div.textContent = text;
  log.appendChild(div);
  return div;
}
function send(prompt) {
  line("user", prompt);
  socket.send(JSON.stringify({prompt}));
}
socket.onmessage = (message) => {
  const event = JSON.parse(message.data);
  if (event.type === "message_update" && event.assistantMessageEvent.type === "text_delta") {
    reply = reply || line("assistant", "");
    reply.textContent += event.assistantMessageEvent.delta;
  } else if (event.type === "tool_execution_start") {
    line("tool", `${event.toolName} ${JSON.stringify(event.args)}`);
  } else if (event.type === "message_end" && event.message.errorMessage) {
    line("error", event.message.errorMessage);
  } else if (event.type === "error") {
    line("error", event.message);
  } else if (event.type === "agent_settled") {
    reply = null;
    line("settled", "");
  }
};
const first = new URLSearchParams(location.search).get("prompt");
if (first) socket.onopen = () => send(first);
document.getElementById("ask").onsubmit = (e) => {
  e.preventDefault();
  const input = document.getElementById("prompt");
  if (input.value) send(input.value);
  input.value = "";
};
</script>
</body></html>
"""

# the events the page draws; the rest (entries, queue updates...) stay on the server
SENT = frozenset({"message_update", "message_end", "tool_execution_start", "agent_settled"})


def create_app(**session_options: Any) -> Starlette:
    """The app: ``/`` is the page, ``/ws`` a session per connection, made with ``session_options``."""

    async def page(request: Request) -> HTMLResponse:
        return HTMLResponse(PAGE)

    async def chat(socket: WebSocket) -> None:
        await socket.accept()
        async with create_agent_session(**session_options) as session:
            try:
                while True:
                    prompt = (await socket.receive_json()).get("prompt", "")
                    try:
                        async for event in session.stream(prompt):
                            if event["type"] in SENT:
                                await socket.send_text(json.dumps(event))
                    except PiError as error:  # a refused prompt or a failed provider: shown, the tab stays
                        await socket.send_text(json.dumps({"type": "error", "message": str(error)}))
            except WebSocketDisconnect:
                pass  # the tab closed: leaving the block shuts its session down

    return Starlette(routes=[Route("/", page), WebSocketRoute("/ws", chat)])


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="provider/model; default: the scripted faux provider")
    parser.add_argument("--cwd", help="the agents' working directory (default: a temporary one)")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        options: dict[str, Any] = {"cwd": args.cwd or scratch, "in_memory": True}
        options |= {"model": args.model} if args.model else {"provider": "faux", "model": "faux-1",
                                                               "agent_dir": scratch}
        uvicorn.run(create_app(**options), host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()
