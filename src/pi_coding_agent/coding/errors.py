"""The coding layer's error tree, so a front end decides by type how to report a failure.

``UserError`` is a request refused because of what the user asked (bad input, a missing session,
no key): its ``str()`` is the whole message and no traceback is due. Anything else that escapes a
command is a defect; Python's own programming-error types (``BUG_TYPES``) get their traceback
printed to stderr, other library errors are reported by message only, as pi reports them.
"""

from __future__ import annotations

from pi_coding_agent.ai.pi_error import PiError


class UserError(PiError):
    """A refused request; ``str(err)`` is the text clients see (the RPC response ``error``)."""


class SessionError(UserError):
    """A session operation refused (no model, nothing to fork, a failed compaction...)."""


class MissingSessionCwdError(SessionError):
    """A saved session whose recorded working directory is gone; the interactive mode asks whether to
    continue in ``fallback_cwd`` or fork the session there, other front ends report the message."""

    def __init__(self, message: str, session_cwd: str, fallback_cwd: str, session_file: str) -> None:
        super().__init__(message)
        self.session_cwd, self.fallback_cwd, self.session_file = session_cwd, fallback_cwd, session_file


class ConfigurationError(UserError):
    """A start-up option that cannot be honoured (an SDK keyword's value, a malformed server entry)."""


class CommandError(UserError):
    """A command refused before it reached the session (a missing or ill-typed field)."""


# Exception types that only a bug raises: reported with their traceback.
BUG_TYPES: tuple[type[Exception], ...] = (
    TypeError, AttributeError, KeyError, IndexError, NameError, AssertionError, ZeroDivisionError,
)


def is_bug(err: BaseException) -> bool:
    """True for a defect (worth a traceback), False for a refusal or an expected failure."""
    return isinstance(err, BUG_TYPES) and not isinstance(err, UserError)


def start_up_failure(err: BaseException) -> str:
    """The stderr line of a session that could not start, as pi prints it: ``Error: <reason>`` (a
    message that says ``Error:`` already keeps its own)."""
    message = str(err) or type(err).__name__
    return message if message.startswith("Error: ") else f"Error: {message}"
