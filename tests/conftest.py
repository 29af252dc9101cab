"""Shared fixtures."""

from collections.abc import Iterator

import pytest

from tests.fakes.llm_server import FakeLLMServer


@pytest.fixture
def fake_llm() -> Iterator[FakeLLMServer]:
    """A started scripted LLM server (see tests/fakes/llm_server.py), stopped after the test."""
    with FakeLLMServer() as server:
        yield server
