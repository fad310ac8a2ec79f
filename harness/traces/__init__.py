"""Tool-call traces in and out: OTLP JSON and a plain JSONL/CSV form.

* :mod:`fleetchaos.traces.otlp_write` writes a traced simulated run as OTLP JSON (one
  trace per task, one span per tool call), the shape the OpenTelemetry Collector's file
  exporter writes, so a simulated day opens in Jaeger, Grafana Tempo or Phoenix;
* :mod:`fleetchaos.traces.read` reads such files, and a team's own OTLP JSON or plain
  JSONL/CSV records, into :class:`~fleetchaos.traces.records.ToolCall` records, streaming
  and bounded in memory;
* :mod:`fleetchaos.traces.codes` maps a team's error codes and HTTP statuses to fault kinds.

Reading and mapping traces import neither SimPy nor NumPy (a test checks it); only the
writer, which works on a simulated run, imports the simulator.
"""
