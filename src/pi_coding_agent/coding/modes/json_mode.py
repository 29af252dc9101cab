"""``pi --mode json "prompt"``: the session header line, then every session event as a JSON line.

The same one-shot driver as print mode; only the output differs. Events go through the same
single writer as RPC mode, so lines never interleave and a slow reader applies back-pressure.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.modes.lifecycle import keep_sigint_from_asyncio, take_over_stdout
from pi_coding_agent.coding.modes.print_mode import initial_prompts, read_piped_stdin, run_headless
from pi_coding_agent.coding.modes.rpc.transport import RecordWriter

if TYPE_CHECKING:
    from pi_coding_agent.coding.agent_session import AgentSession
    from pi_coding_agent.coding.options import CliArgs


def run(args: CliArgs, images: list[JsonObject] | None = None) -> int:
    prompts = initial_prompts(args, read_piped_stdin())
    output_fd = take_over_stdout()
    keep_sigint_from_asyncio()
    return asyncio.run(_main(args, prompts, output_fd, images))


async def _main(args: CliArgs, prompts: list[str], output_fd: int, images: list[JsonObject] | None) -> int:
    writer = RecordWriter(output_fd)
    await writer.start()

    def attach(session: AgentSession) -> None:
        writer.send(session.sm.header)
        session.subscribe(writer.send)

    code = await run_headless(args, "json", prompts, finish=lambda _: 0, attach=attach, close_output=writer.close,
                              images=images)
    await writer.close()  # also when the session could not be built
    return code
