"""Start-up errors in the SDK's words: a text that names a command-line flag names the keyword instead."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

from pi_coding_agent.ai.models.resolution import ModelResolutionError
from pi_coding_agent.coding.errors import UserError

KEYWORDS = {"--api-key": "api_key=", "--models": "scoped_models=", "--model": "model=",
            "--provider": "provider=", "--thinking": "thinking_level=", "--session": "session_file=",
            "--list-models": "get_available_models() of any session"}
_FLAG = re.compile("|".join(re.escape(flag) + r"\b" for flag in sorted(KEYWORDS, key=len, reverse=True)))


_LOGIN = "or run `pi auth login"  # no key for the provider: the SDK has one more way to give it


def sdk_text(text: str) -> str:
    text = text.replace(_LOGIN, "pass api_key= to create_agent_session(), " + _LOGIN)
    return _FLAG.sub(lambda m: KEYWORDS[m.group(0)], text)


@contextmanager
def in_sdk_terms() -> Iterator[None]:
    """Re-raise a refused start-up or run (same type) with its flags named as keywords."""
    try:
        yield
    except (UserError, ModelResolutionError) as exc:
        text = sdk_text(str(exc))
        if text == str(exc):
            raise
        raise type(exc)(text) from None
