"""Runs: one world per seed, comparisons, executors, sweeps, ablation, determinism and traces."""
