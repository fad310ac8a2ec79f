"""Gates: the run history, the one regression rule, baselines, the gate session the CLI and the plugin share, and statistical assertions."""
