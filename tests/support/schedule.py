"""The order in which xdist hands tests to its workers: the longest work first.

Under ``--dist loadgroup`` each ungrouped test is a unit of its own and each ``xdist_group`` one unit;
a worker asks for the next unit when it has nearly run out. In collection order the longest tests
(a reference comparison of 20 s, the installs) could start last and keep one worker busy while the
other stands idle. Ordered longest first, the short tests fill the end. Only the order changes: every
test still runs, and a run on one process (``-n 0``) keeps the collection order.
"""

from __future__ import annotations

from collections import Counter

import pytest

LONGEST = (
    "coding/packages/test_npm_versions.py::test_ranges_as_the_reference",
    "coding/cli/test_auth_cli.py::test_auth_commands_match_the_reference",  # brings the fixed-ports group
    "coding/export/test_export_html_browser.py::test_large_session",
    "coding/packages/test_resource_config.py::test_the_same_keys_write_the_same_settings_as_the_reference",
    "coding/packages/test_packages.py::test_what_one_side_installs_the_other_loads",
    "coding/packages/test_pypi_packages.py::test_install_load_update_remove",
    "coding/mcp/test_mcp_roots.py::test_roots_match_the_reference",
    "coding/codemode/test_codemode_mcp_reference.py::test_scripts_calling_mcp_tools_match_the_reference",
    "coding/rpc/test_reliability.py::test_output_backlog_stops_the_reader_and_bounds_memory",
    "coding/packages/test_npm_versions.py::test_ranges_reinstall_and_update_within_bounds",
    "coding/packages/test_pypi_packages.py::test_e_is_refreshed_on_each_start_unless_pinned_or_offline",
    "coding/extensions/test_builtin_extension_names.py::test_builtin_names_match_the_reference",
    "coding/packages/test_packages.py::test_npm_package_installs_from_a_registry_and_loads",
    "coding/packages/test_pypi_packages.py::test_a_pinned_version_not_installed_is_installed_at_start",
)
"""The tests that took longest in a measured run (``--durations``), longest first, by node id prefix
under ``tests/``. A test missing from here only starts later; a stale entry matches nothing."""

HEAVY_MARKERS = ("slow", "reference", "browser")
"""Each test with one of these marks weighs 1 in its module's weight (each took over half a second)."""


def _rank(item: pytest.Item) -> int:
    """The place of ``item`` in ``LONGEST``, or its length when it is not there."""
    nodeid = item.nodeid.removeprefix("tests/")
    return next((i for i, prefix in enumerate(LONGEST) if nodeid.startswith(prefix)), len(LONGEST))


def longest_first(items: list[pytest.Item]) -> None:
    """Reorder ``items`` in place: the ``LONGEST`` tests, then the modules by their number of heavy
    tests, most first, each module's tests together and in their order (module fixtures stay shared:
    the sort is stable and pytest collects a module's tests together)."""
    weight = Counter(item.nodeid.split("::")[0] for item in items
                     if any(item.get_closest_marker(marker) is not None for marker in HEAVY_MARKERS))
    items.sort(key=lambda item: (_rank(item), -weight[item.nodeid.split("::")[0]]))
