"""Importing the plugin (and pytest start-up with it) stays light: no SimPy, matplotlib, Faker or hypothesis."""

from __future__ import annotations

import json
import sys

import patience

HEAVY = ("simpy", "matplotlib", "faker", "hypothesis", "scipy", "tenacity")

PROBE = """
import json, sys
import fleetchaos.testing.pytest_plugin
import fleetchaos
fleetchaos.__all__
print(json.dumps(sorted(m for m in {heavy!r} if m in sys.modules)))
"""


def test_importing_the_plugin_imports_no_simulation_charts_or_hypothesis():
    """A fresh interpreter that imports fleetchaos.testing.pytest_plugin (and harness) has none of the heavy modules loaded."""
    out = patience.run(
        [sys.executable, "-c", PROBE.format(heavy=HEAVY)], capture_output=True, text=True, check=True, cpu_s=60
    )
    assert json.loads(out.stdout) == []


def test_pytest_start_up_with_the_plugin_loads_none_of_them(pytester):
    """In a pytest process that autoloads the plugin, collecting and running a plain test imports none of them.

    Faker ships its own pytest plugin, which imports Faker; it is switched off here so the
    check is about fleetchaos's plugin.
    """
    pytester.makepyfile(
        f"""
        import sys

        def test_light(pytestconfig):
            assert pytestconfig.pluginmanager.has_plugin("fleetchaos")
            assert [m for m in {HEAVY!r} if m in sys.modules] == []
        """
    )
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:faker").assert_outcomes(passed=1)
