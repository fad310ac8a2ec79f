"""Results: the oracle, per-run metrics, statistics and the result models reports read."""
