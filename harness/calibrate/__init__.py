"""Calibration: fit a scenario to a team's tool-call traces.

* :mod:`~fleetchaos.calibrate.observed` folds the trace records into compact columns;
* :mod:`~fleetchaos.calibrate.latency` fits per-tool call durations (log-normal, with
  goodness of fit against other families);
* :mod:`~fleetchaos.calibrate.changepoint` finds windows of elevated error rates;
* :mod:`~fleetchaos.calibrate.faults` turns failures into fault specs (rates, windows,
  persistent faults, per-worker events);
* :mod:`~fleetchaos.calibrate.fit` assembles the scenario with each value's provenance;
* :mod:`~fleetchaos.calibrate.yaml_out` writes it as YAML with provenance comments;
* :mod:`~fleetchaos.calibrate.report` writes the fit report (observed against simulated).

SciPy and NumPy are imported here only, when a calibration runs.
"""
