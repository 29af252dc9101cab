"""How ``pi`` on a terminal starts and ends.

``run`` builds the session exactly as the other modes do (``bootstrap.create_session``, mode
``interactive``) with the terminal UI as its ``ctx.ui`` ("Trust project folder?" asked on the
terminal first, when pi asks it; a start-up session whose directory is gone is asked about in the
app, which opens on a new session meanwhile), then runs ``app.PiApp`` until the user quits,
SIGTERM/SIGHUP arrive, or an extension calls ``ctx.shutdown()``; the session is shut down (and so
saved) on every one of those paths, after Textual has restored the terminal.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from contextlib import ExitStack
from functools import partial
from typing import TYPE_CHECKING, Any

from pi_coding_agent.coding.errors import MissingSessionCwdError, start_up_failure

if TYPE_CHECKING:
    from pi_coding_agent.coding.agent_session import AgentSession
    from pi_coding_agent.coding.options import CliArgs

SIGNAL_CODES = ((signal.SIGTERM, 143), (signal.SIGHUP, 129))
# Textual paints a changed screen on its next frame; at its default 60 a typed key waited up to 16 ms
# for it. Our transcript redraws on its own 30 Hz timer, so this raises no streaming cost.
SCREEN_FPS = "240"


def run(args: CliArgs, images: list[dict[str, Any]] | None = None) -> int:
    """``images`` (from ``@path`` arguments) go with the first message."""
    return asyncio.run(_main(args, images))


async def _main(args: CliArgs, images: list[dict[str, Any]] | None) -> int:
    from pi_coding_agent.coding.modes.start_up import collector_paused

    start_up = ExitStack()  # no garbage collection until the first frame: start-up makes objects and frees few
    start_up.enter_context(collector_paused())
    _set_screen_fps()
    from pi_coding_agent.coding.modes.interactive.extension_ui import TuiExtensionUI

    ui = TuiExtensionUI()
    try:
        session, missing = await open_session(args, ui)
    except Exception as err:
        start_up.close()
        print(start_up_failure(err), file=sys.stderr)
        return 1
    try:
        app = build_app(session, ui, args, images, missing)
        app.when_ready.append(start_up.close)
        session.set_shutdown_handler(lambda: app.exit(0))
        loop = asyncio.get_running_loop()
        for signum, code in SIGNAL_CODES:
            loop.add_signal_handler(signum, _exit_with, app, code)
        await app.run_async()
        return int(app.return_code or 0)
    finally:
        start_up.close()
        await session.shutdown()


async def open_session(args: CliArgs, ui: Any, **options: Any) -> tuple[AgentSession, MissingSessionCwdError | None]:
    """The session of ``args`` (``options``: ``create_session``'s); when it is a saved one whose
    directory is gone, a new one instead and the error, for the app to ask about. "Trust project
    folder?" is asked on the terminal before the app starts, when pi asks it."""
    from pi_coding_agent.coding.bootstrap import create_session
    from pi_coding_agent.coding.modes.interactive.trust_prompt import ask_trust

    options.setdefault("ask_trust", ask_trust)

    try:
        return await create_session(args, "interactive", ui, **options), None
    except MissingSessionCwdError as missing:
        fresh = args.replace(session=None, continue_session=False)
        return await create_session(fresh, "interactive", ui, **options), missing


def _exit_with(app: Any, status: int) -> None:
    """A signal ends the app with its conventional status (the terminal is restored on the way out)."""
    app.exit(return_code=status)


def _set_screen_fps() -> None:
    """Textual reads ``TEXTUAL_FPS`` once, on its first import (a user's own value wins); it is not
    left in the environment the tools' commands inherit."""
    if "TEXTUAL_FPS" in os.environ:
        return
    os.environ["TEXTUAL_FPS"] = SCREEN_FPS
    try:
        import textual.constants  # noqa: F401
    finally:
        del os.environ["TEXTUAL_FPS"]


def build_app(session: Any, ui: Any, args: CliArgs, images: list[dict[str, Any]] | None = None,
              missing: MissingSessionCwdError | None = None) -> Any:
    """The app for ``session`` with the keys, theme and first messages the options and settings give;
    ``missing``: the start-up session whose directory is gone, asked about first."""
    _set_screen_fps()
    from pi_coding_agent.coding.modes.interactive.app import PiApp
    from pi_coding_agent.coding.modes.interactive.keys import KeyMap
    from pi_coding_agent.coding.modes.interactive.theme import load_palette, session_theme_files

    agent_dir = session.rt.agent_dir
    keymap = KeyMap.load(agent_dir)
    palette = load_palette(args.use_theme or session.rt.settings.theme, session_theme_files(session.rt),
                           list(args.themes))
    return PiApp(session, ui, keymap, palette, initial=list(args.messages), images=images,
                 opening=_opening(args, missing))


def _opening(args: CliArgs, missing: MissingSessionCwdError | None) -> Callable[[Any], Awaitable[bool]] | None:
    """The dialog before the first messages, if any (its module loads only then)."""
    if missing is not None:
        from pi_coding_agent.coding.modes.interactive import project

        return partial(project.open_missing_at_startup, missing=missing)
    if args.resume:
        from pi_coding_agent.coding.modes.interactive import commands

        return commands.resume_at_startup
    return None
