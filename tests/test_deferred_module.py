"""``defer_module`` (coding/modes/start_up.py): a stand-in that imports the real module on first use.

The ``pi`` entry point defers ``inspect`` this way; here a probe module on a temporary path stands in
for it, one whose import is slow enough for threads to meet inside it.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from pi_coding_agent.coding.modes.start_up import defer_module

PROBE = '''
import time
time.sleep(0.2)  # threads that read an attribute meanwhile must wait, not see a half-made module
def answer():
    return 42
'''


@pytest.fixture
def probe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    name = f"deferred_probe_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(PROBE)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


def test_the_stand_in_loads_on_first_read_and_takes_over(probe: str) -> None:
    defer_module(probe)
    stand_in = sys.modules[probe]
    assert importlib.util.find_spec(probe) is not None  # the spec is known before the load
    assert "answer" not in vars(stand_in)  # nothing executed yet
    module = __import__(probe)
    assert module is stand_in  # ``import`` hands out the stand-in
    assert module.answer() == 42  # first read: the real module runs
    assert sys.modules[probe] is not stand_in and sys.modules[probe].answer is stand_in.answer
    defer_module(probe)  # loaded: a no-op
    assert sys.modules[probe] is not stand_in and not isinstance(sys.modules[probe], type(stand_in))


def test_threads_meeting_in_the_first_read_all_get_the_real_attribute(probe: str) -> None:
    defer_module(probe)
    stand_in = sys.modules[probe]
    answers: list[object] = []
    errors: list[BaseException] = []

    def read() -> None:
        try:
            answers.append(stand_in.answer())
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=read) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and answers == [42] * 8


def test_a_missing_attribute_stays_an_attribute_error(probe: str) -> None:
    defer_module(probe)
    with pytest.raises(AttributeError):
        sys.modules[probe].no_such_name  # noqa: B018
