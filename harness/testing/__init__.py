"""Testing: the pytest plugin, scenario suites, hypothesis strategies and shrinking."""
