"""Gates: the run history, the one regression rule, baselines and statistical assertions."""
