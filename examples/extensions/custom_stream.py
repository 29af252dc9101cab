"""A provider with a stream of its own: ``register_provider(..., stream=...)``.

    pi -e examples/extensions/custom_stream.py --provider shouting --model loud-1

For an API pi has no adapter for, ``stream`` speaks ``ai/stream.py``'s adapter contract: an async
generator ``stream(model, context, options, output)`` that fills the ``output`` assistant message
and yields the block events (``text_start``, ``text_delta``, ``text_end``, ...); pi adds ``start``,
``done``, errors, cancellation, cost and timing around it. This one answers with the last user
message in capitals, with no network at all.
"""


async def shout(model, context, options, output):
    last = next((m for m in reversed(context["messages"]) if m["role"] == "user"), None)
    content = last["content"] if last else ""
    text = content if isinstance(content, str) else "".join(b.get("text", "") for b in content if b["type"] == "text")
    block = {"type": "text", "text": ""}
    output["content"].append(block)
    yield {"type": "text_start", "contentIndex": 0}
    for word in text.upper().split():
        delta = word if not block["text"] else f" {word}"
        block["text"] += delta
        yield {"type": "text_delta", "contentIndex": 0, "delta": delta}
    yield {"type": "text_end", "contentIndex": 0, "content": block["text"]}
    output["usage"]["output"] = len(block["text"].split())
    output["stopReason"] = "stop"


def setup(pi):
    pi.register_provider("shouting", {
        "baseUrl": "local://shouting", "apiKey": "none", "api": "shouting-api",
        "models": [{"id": "loud-1", "name": "Loud", "contextWindow": 8000, "maxTokens": 1000}],
    }, stream=shout)
