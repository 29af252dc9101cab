"""``stable_source``: one path per source, so that jiti's cache (keyed by path) serves later runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import compiled_once
from tests.support.compiled_once import stable_source


@pytest.fixture(autouse=True)
def _root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compiled_once, "STABLE_ROOT", tmp_path)


def test_one_source_one_path_and_another_source_another() -> None:
    first = stable_source("reference/ext.ts", "export default 1;\n")
    assert first.name == "ext.ts" and first.parent.name == "reference"
    assert stable_source("reference/ext.ts", "export default 1;\n") == first
    assert stable_source("reference/ext.ts", "export default 2;\n") != first
    assert stable_source("ours-ext/ext.ts", "export default 1;\n") != first


def test_a_damaged_file_is_written_again_and_no_part_is_left(tmp_path: Path) -> None:
    path = stable_source("a.ts", "export default 1;\n")
    path.write_text("export default")
    assert stable_source("a.ts", "export default 1;\n").read_text() == "export default 1;\n"
    assert [p.name for p in path.parent.iterdir()] == ["a.ts"]
