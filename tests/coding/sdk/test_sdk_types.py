"""``pi_coding_agent.events`` lets a type checker narrow an event on its ``type``: mypy run on a host snippet."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.support.mypy_snippet import mypy_notes

HOST = textwrap.dedent('''
    from pi_coding_agent import Session
    from pi_coding_agent.events import AgentEvent


    def on_event(event: AgentEvent) -> None:
        if event["type"] == "tool_execution_end":
            reveal_type(event)
            failed: bool = event["isError"]


    async def host(session: Session) -> None:
        session.subscribe(on_event)
        async for event in session.stream("hi"):
            if event["type"] == "message_update":
                reveal_type(event)
            elif event["type"] == "agent_settled":
                aborted: bool = event["aborted"]
                event["assistantMessageEvent"]
        async for other in session.events():
            reveal_type(other)
''')


@pytest.mark.slow  # a whole mypy run
def test_mypy_narrows_events_on_their_type(tmp_path: Path) -> None:
    found, out = mypy_notes(tmp_path, HOST)
    notes = dict(found)
    assert sorted(notes) == [8, 16, 19, 21], out
    assert notes[8].startswith('note: Revealed type is "TypedDict(pi_coding_agent.agent.events.ToolExecutionEndEvent')
    assert notes[16].startswith('note: Revealed type is "TypedDict(pi_coding_agent.agent.events.MessageUpdateEvent')
    assert notes[19] == 'error: TypedDict "AgentSettledEvent" has no key "assistantMessageEvent"  [typeddict-item]'
    assert "events.AgentSettledEvent" in notes[21] and " | TypedDict(" in notes[21]  # events(): the whole union
