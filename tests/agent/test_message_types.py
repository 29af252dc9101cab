"""Transcript messages and built-in tool parameters are typed: a type checker narrows a message on
its ``role`` and refuses a field its role lacks (mypy run on a snippet)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.support.mypy_snippet import mypy_notes

SNIPPET = textwrap.dedent('''
    from pi_coding_agent.agent.events import AgentMessage
    from pi_coding_agent.coding.tools.edit import EditParams


    def cost(messages: list[AgentMessage]) -> float:
        for message in messages:
            if message["role"] == "assistant":
                reveal_type(message)
                return message["usage"]["cost"]["total"]
            if message["role"] == "bashExecution":
                message["stopReason"]
        return 0.0


    def first_old_text(params: EditParams) -> str:
        return params["edits"][0]["oldtext"]
''')


@pytest.mark.slow  # a whole mypy run
def test_messages_narrow_on_role_and_tool_params_are_checked(tmp_path: Path) -> None:
    notes, out = mypy_notes(tmp_path, SNIPPET)
    assert sorted({n for n, _ in notes}) == [9, 12, 17], out
    assert any(n == 9 and text.startswith('note: Revealed type is "TypedDict(pi_coding_agent.ai.types.AssistantMessage')
               for n, text in notes), out
    assert (12, 'error: TypedDict "BashExecutionMessage" has no key "stopReason"  [typeddict-item]') in notes, out
    assert (17, 'error: TypedDict "EditItem" has no key "oldtext"  [typeddict-item]') in notes, out
