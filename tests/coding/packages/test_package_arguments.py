"""The package commands' argument checks against pi 1.6.0: which problem is reported first (an unknown
option, a missing value, an unexpected argument, conflicting ``update`` targets, a missing source),
in pi's words, on stderr, with exit code 1; ``list`` ignores one positional argument.

``update``'s usage line is ours (pi's names its self-update and model flags, not done here), so for
``update`` the first stderr line is compared, for the others everything.
"""

from __future__ import annotations

import pytest

from tests.coding.packages.test_packages import _env
from tests.support.cli_sides import needs_reference
from tests.support.package_fixtures import run_pi

CASES = [
    ["list", "extra"],
    ["list", "a", "b"],
    ["list", "--local"],
    ["install", "--foo", "./p"],
    ["install", "./p", "./q", "--bogus"],
    ["install", "./p", "./q"],
    ["remove", "--extensions"],
    ["uninstall"],
    ["update", "--extension"],
    ["update", "--extension", "--extensions"],
    ["update", "--extension", "./p", "--extension", "./q"],
    ["update", "--extension", "./p", "./q"],
    ["update", "--extension", "./p", "--extensions"],
    ["update", "--extensions", "./p"],
    ["update", "./p", "./q"],
    ["update", "--all", "./p"],
    ["update", "--models", "./p"],
    ["config", "--bogus"],
    ["config", "extra", "--bogus"],
    ["config", "--bogus", "extra"],
]


def _answer(kind: str, argv: list[str], tmp_path) -> tuple[int, str, str]:
    home, work = tmp_path / kind / "home", tmp_path / kind / "work"
    work.mkdir(parents=True)
    done = run_pi(kind, argv, _env(home), work, timeout=60)
    stderr = done.stderr if argv[0] != "update" else done.stderr.splitlines()[0]
    return done.returncode, done.stdout, stderr


@needs_reference
@pytest.mark.parametrize("argv", CASES, ids=" ".join)
def test_arguments_are_checked_as_pi_checks_them(argv, tmp_path):
    ours = _answer("ours", argv, tmp_path)
    assert ours == _answer("reference", argv, tmp_path)
    assert ours[0] == (0 if argv[:2] == ["list", "extra"] else 1)


def test_update_of_pi_itself_is_refused_after_the_argument_checks(tmp_path):
    done = run_pi("ours", ["update", "--self", "--extensions"], _env(tmp_path / "home"), tmp_path, timeout=60)
    assert done.returncode == 1
    assert done.stderr.startswith("`pi update --self` (updating pi itself or its model catalogs) is not supported")


def _flags(help_text: str) -> list[str]:
    """The options a help text lists: the flag column of its ``Options:`` section."""
    section = help_text.split("\nOptions:\n", 1)[1].split("\n\n", 1)[0]
    return [line.split()[0].rstrip(",") for line in section.splitlines() if line.startswith("  -")]


@needs_reference
@pytest.mark.parametrize("argv", [["install", "--help"], ["remove", "-h"], ["uninstall", "--help"], ["list", "--help"]])
def test_help_has_pis_usage_line_and_options(argv, tmp_path):
    """The words are ours; the usage line and the options listed are pi's."""
    ours, reference = (run_pi(kind, argv, _env(tmp_path / kind), tmp_path, timeout=60) for kind in ("ours", "reference"))
    assert (ours.returncode, ours.stderr) == (reference.returncode, reference.stderr) == (0, "")
    assert ours.stdout.splitlines()[:2] == reference.stdout.splitlines()[:2]
    assert _flags(ours.stdout) == _flags(reference.stdout) and _flags(ours.stdout)
