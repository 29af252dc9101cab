"""Send the model requests through a company gateway, and watch what goes over the wire.

    GATEWAY_URL=https://llm.example.com/v1 GATEWAY_KEY=... \\
        pi -e examples/extensions/gateway_provider.py --provider gateway --model team-model

* ``register_provider`` adds the ``gateway`` provider (models.json's provider shape, camelCase):
  its model is listed by ``get_available_models`` and ``--list-models``, ``--model`` and
  ``set_model`` accept it, and ``/gateway off`` removes it again (``unregister_provider``).
* ``before_provider_headers`` adds a tracing header and removes one (a None value);
* ``after_provider_response`` sees each response's status and headers before its body is read;
* ``provider_stream_event`` sees every raw stream event (here: counted).

``/gateway`` reports what the handlers saw.
"""

import json
import os


def setup(pi):
    pi.register_provider("gateway", {
        "baseUrl": os.environ.get("GATEWAY_URL", "https://llm.example.com/v1"),
        "apiKey": "$GATEWAY_KEY",
        "api": "openai-completions",
        "headers": {"x-team": "platform", "x-debug": "on"},
        "models": [{"id": "team-model", "name": "Team model", "contextWindow": 32000, "maxTokens": 2048}],
    })
    seen = {"statuses": [], "contentTypes": [], "streamEvents": 0}

    def add_trace(event, ctx):
        event["headers"]["x-trace"] = "pi-gateway"
        event["headers"]["x-debug"] = None  # never sent

    def check_response(event, ctx):
        seen["statuses"].append(event["status"])
        seen["contentTypes"].append(event["headers"].get("content-type"))

    def count(event, ctx):
        seen["streamEvents"] += 1

    pi.on("before_provider_headers", add_trace)
    pi.on("after_provider_response", check_response)
    pi.on("provider_stream_event", count)

    def gateway(args, ctx):
        if args.strip() == "off":
            pi.unregister_provider("gateway")
            ctx.ui.notify("gateway removed", "info")
        else:
            ctx.ui.notify(json.dumps(seen, separators=(",", ":")), "info")

    pi.register_command("gateway", description="What the gateway handlers saw; 'off' removes it", handler=gateway)
