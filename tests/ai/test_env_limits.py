"""Waits the environment may change: a positive number of seconds, anything else keeps pi's value."""

from __future__ import annotations

import pytest

from pi_coding_agent.ai.env_limits import env_seconds


@pytest.mark.parametrize(("raw", "expected"), [("2.5", 2.5), ("1", 1.0), ("0", 10.0), ("-3", 10.0), ("", 10.0),
                                               ("soon", 10.0), ("nan", 10.0), ("inf", 10.0)])
def test_a_positive_number_of_seconds_or_the_default(monkeypatch: pytest.MonkeyPatch, raw: str,
                                                      expected: float) -> None:
    monkeypatch.setenv("PI_TEST_WAIT_S", raw)
    assert env_seconds("PI_TEST_WAIT_S", 10.0) == expected


def test_an_unset_variable_keeps_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PI_TEST_WAIT_S", raising=False)
    assert env_seconds("PI_TEST_WAIT_S", 10.0) == 10.0
