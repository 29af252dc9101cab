"""Watch a provider's raw stream: ``provider_stream_event`` for every API, Bedrock included.

    pi -e examples/extensions/stream_watch.py --provider amazon-bedrock --model <id>

Each event the provider sends is handed over before pi turns it into its own events: a server-sent
event's JSON for the HTTP APIs, one decoded frame for Bedrock's binary event stream
(``{"contentBlockDelta": {...}}``, ``{"metadata": {...}}``, ...). ``/stream-events`` shows what
the requests of the last prompt streamed.
"""

import json


def setup(pi):
    seen = []

    def show(args, ctx):
        ctx.ui.notify(json.dumps(seen, separators=(",", ":")), "info")

    pi.on("agent_start", lambda event, ctx: seen.clear())
    pi.on("provider_stream_event", lambda event, ctx: seen.append(event["data"]))
    pi.register_command("stream-events", description="The raw events of the last prompt", handler=show)
