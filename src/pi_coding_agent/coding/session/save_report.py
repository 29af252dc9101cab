"""What a user sees when the session file cannot be saved (docs/rpc.md, "When a session cannot be
saved"): one line on stderr naming the file and the OS error, and a ``notify`` a client can show;
another once a later write saved everything again."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from pathlib import Path

from pi_coding_agent.ai.atomic_file import describe_os_error

Notify = Callable[[str, str], None]


def report_save(notify: Notify, path: Path, error: OSError | None) -> None:
    """Report a failed write (``error``) or the write that saved the whole session again (None)."""
    if error is None:
        message, kind = f"Session file {path} saved again; nothing is missing from it.", "info"
    else:
        message, kind = (f"Session file {path} could not be saved ({describe_os_error(error)}); the session goes on "
                         f"in memory and the whole file is written again at the next change."), "error"
        print(f"Error: {message}", file=sys.stderr)
    try:  # after the event being persisted has reached the client
        asyncio.get_running_loop().call_soon(notify, message, kind)
    except RuntimeError:
        notify(message, kind)
