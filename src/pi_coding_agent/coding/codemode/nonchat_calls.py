"""Classifier and image calls made with the session's credentials (codemode's ``models.*``).

The credential, models.json headers and identity headers are resolved as for the session's own
requests (``SessionRuntime.request_options``), after a due OAuth token is refreshed. pi's retry
counts for these calls differ from chat requests: classifiers retry twice, image requests never.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Protocol

from pi_coding_agent.ai.abort import AbortSignal
from pi_coding_agent.ai.stream import StreamOptions
from pi_coding_agent.ai.types import JsonObject

IMAGE_MAX_RETRIES = 0


class CredentialSource(Protocol):
    """What these calls read of the session runtime."""

    auth: Any  # prepare(provider), oauth_base_url(provider)

    def has_auth(self, provider: str) -> bool: ...

    def request_options(self, model: Any) -> StreamOptions: ...


async def run_nonchat_model(rt: CredentialSource, kind: str, model: dict[str, Any], context: dict[str, Any],
                            signal: AbortSignal | None) -> JsonObject:
    """Run ``model`` (a catalog entry of type ``kind``) on ``context``; failures are results."""
    from pi_coding_agent.ai.nonchat import classifiers, images
    from pi_coding_agent.ai.nonchat import requests as nonchat_requests

    outputs = "answers" if kind == "classifier" else "output"
    entry: Any = model
    problem = classifiers.refusal(entry, context) if kind == "classifier" else images.refusal(entry)
    if problem is not None:
        return nonchat_requests.error_result(entry, problem, outputs=outputs)
    if not rt.has_auth(model["provider"]):
        return nonchat_requests.error_result(entry, f"Provider is not configured: {model['provider']}", outputs=outputs)
    try:
        await rt.auth.prepare(model["provider"])
        if base_url := rt.auth.oauth_base_url(model["provider"]):  # the host a sign-in names (Copilot's token)
            entry = {**entry, "baseUrl": base_url}
        options = rt.request_options(entry)
    except Exception as exc:  # a failed key command or header value: the call's error, not the script's
        return nonchat_requests.error_result(entry, nonchat_requests.failure_text(exc), outputs=outputs)
    # pi's model runtime is given no session id or client identity here: no OpenCode session header
    # and no provider attribution headers are sent (User-Agent is)
    options = replace(options, headers={k: v for k, v in options.headers.items() if k != "x-opencode-session"},
                      attribution=False)
    if kind == "classifier":
        options = replace(options, signal=signal, max_retries=nonchat_requests.DEFAULT_MAX_RETRIES)
        return await classifiers.classify(entry, context, options)
    return await images.generate_images(entry, context, replace(options, signal=signal, max_retries=IMAGE_MAX_RETRIES))
