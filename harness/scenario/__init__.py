"""Scenario files: loading, safe YAML, validation messages, parameters, the fault catalogue and docs."""
