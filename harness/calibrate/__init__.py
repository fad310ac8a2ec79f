"""Calibration: fit a scenario to a team's tool-call traces.

* :mod:`~fleetchaos.calibrate.observed` folds the trace records into compact columns;
* :mod:`~fleetchaos.calibrate.latency` fits per-tool call durations (log-normal, with
  goodness of fit against other families);
* :mod:`~fleetchaos.calibrate.changepoint` finds windows of elevated error rates;
* :mod:`~fleetchaos.calibrate.faults` turns failures into per-call fault specs (rates,
  windows, persistent faults), :mod:`~fleetchaos.calibrate.state_faults` into state
  faults (per-worker events, quotas) and tells which tools call the API;
* :mod:`~fleetchaos.calibrate.rate_limit` fits the provider's token bucket (its tools, rate,
  burst and rate cuts) from its refusals and their retry-after hints;
* :mod:`~fleetchaos.calibrate.templates` finds task templates and tool slots;
* :mod:`~fleetchaos.calibrate.fit` assembles the scenario with each value's provenance;
* :mod:`~fleetchaos.calibrate.yaml_out` writes it as YAML with provenance comments;
* :mod:`~fleetchaos.calibrate.report` writes the fit report (observed against simulated);
* :mod:`~fleetchaos.calibrate.roundtrip` simulates, exports, calibrates and simulates again.

SciPy and NumPy are imported here only, when a calibration runs.
"""
