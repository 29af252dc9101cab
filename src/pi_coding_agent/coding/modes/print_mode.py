"""``pi -p "prompt"``: run the prompts one after another, print the final answer, exit.

The one-shot driver here is shared with JSON mode (``json_mode``), which differs only in what it
writes: print mode writes the last assistant message's text once everything is done. Like pi, both
hand stdout to their own output alone, so a stray print from a tool or a library goes to stderr.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.errors import start_up_failure
from pi_coding_agent.coding.modes.lifecycle import (
    OrderlyShutdown,
    keep_sigint_from_asyncio,
    take_over_stdout,
    write_all,
)
from pi_coding_agent.coding.ui import NoUI

if TYPE_CHECKING:
    from pi_coding_agent.coding.agent_session import AgentSession
    from pi_coding_agent.coding.options import CliArgs

TRUNCATED = "Response was truncated: the model reached its output token limit."


def run(args: CliArgs, images: list[JsonObject] | None = None) -> int:
    """``images`` (from ``@path`` arguments) go with the first prompt."""
    prompts = initial_prompts(args, read_piped_stdin())
    output_fd = take_over_stdout()
    from pi_coding_agent.coding.modes.print_report import attach_retry_report

    keep_sigint_from_asyncio()
    return asyncio.run(run_headless(args, "print", prompts, finish=lambda session: _print_answer(session, output_fd),
                                    attach=attach_retry_report, images=images))


def read_piped_stdin() -> str | None:
    """All of stdin when it is a pipe or file (trimmed; None when empty or a terminal)."""
    if sys.stdin is None or sys.stdin.isatty():
        return None
    text = sys.stdin.buffer.read().decode(errors="replace").strip()
    return text or None


def initial_prompts(args: CliArgs, stdin_text: str | None) -> list[str]:
    """The prompts to run; piped stdin is prepended to the first one (joined without a separator, as pi does)."""
    messages = list(getattr(args, "messages", []) or [])
    if stdin_text is None:
        return messages
    return [stdin_text + (messages[0] if messages else ""), *messages[1:]]


async def run_headless(
    args: CliArgs,
    mode: str,
    prompts: list[str],
    *,
    finish: Callable[[AgentSession], int],
    attach: Callable[[AgentSession], None] | None = None,
    close_output: Callable[[], Awaitable[None]] | None = None,
    images: list[JsonObject] | None = None,
) -> int:
    """Build the session, run ``prompts`` to completion, then ``finish`` decides the exit code.

    ``attach`` runs before the first prompt (JSON mode subscribes there); ``close_output`` flushes
    the mode's own output after the session has shut down. SIGTERM/SIGHUP end the run in order.
    """
    from pi_coding_agent.coding.modes.start_up import collector_paused

    try:
        with collector_paused():  # as the RPC mode: start-up makes objects and frees few (start_up.py)
            from pi_coding_agent.coding.bootstrap import create_session

            session = await create_session(args, mode, NoUI())
    except Exception as err:
        print(start_up_failure(err), file=sys.stderr)
        return 1

    async def cleanup() -> None:
        try:
            await session.shutdown()
        finally:
            if close_output is not None:
                await close_output()

    shutdown = OrderlyShutdown(cleanup)
    shutdown.install_signal_handlers()
    if attach is not None:
        attach(session)
    body = asyncio.create_task(_run_prompts(session, prompts, finish, images))
    stopped = asyncio.create_task(shutdown.wait())
    await asyncio.wait({body, stopped}, return_when=asyncio.FIRST_COMPLETED)
    if not body.done():  # a signal arrived: the shutdown already aborted the run
        body.cancel()
        return await stopped
    stopped.cancel()
    shutdown.begin(body.result())
    return await shutdown.wait()


async def _run_prompts(session: AgentSession, prompts: list[str], finish: Callable[[AgentSession], int],
                       images: list[JsonObject] | None) -> int:
    try:
        for index, text in enumerate(prompts):
            await session.prompt(text, images if index == 0 else None)
            await session.wait_for_idle()
    except Exception as err:  # a refused prompt (no model, no key...) ends the mode with its message
        print(str(err) or type(err).__name__, file=sys.stderr)
        return 1
    return finish(session)


def _print_answer(session: AgentSession, output_fd: int) -> int:
    """The last assistant message's text blocks; on an error or abort, also one failure line on stderr (exit 1)."""
    messages = session.get_messages()
    last = messages[-1] if messages else None
    if last is None or last["role"] != "assistant":
        return 0
    stop_reason = last.get("stopReason")
    text = "".join(f"{block['text']}\n" for block in last.get("content", []) if block["type"] == "text")
    write_all(output_fd, text.encode())  # on a failure: what had streamed before it
    if stop_reason in ("error", "aborted"):
        from pi_coding_agent.coding.modes.print_report import failure_line

        print(failure_line(last), file=sys.stderr)
        return 1
    if stop_reason == "length":
        print(TRUNCATED, file=sys.stderr)
        return 1
    return 0
