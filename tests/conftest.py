"""Suite-wide test set-up: the ``pytester`` fixture for the plugin tests (tests/plugin).

``pytest_plugins`` may only be set in a top-level conftest, hence here.
"""

pytest_plugins = ["pytester"]
