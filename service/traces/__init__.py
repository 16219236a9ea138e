"""OpenTelemetry traces as a source of goldwatch events (issue 20).

* :mod:`service.traces.spans` - the plain span records every decoder produces.
* :mod:`service.traces.otlp` - ``ExportTraceServiceRequest`` protobuf and OTLP/JSON bytes to
  span records.
* :mod:`service.traces.mapping` - one assembled trace to one
  :class:`~service.events.QueryLogEvent` (OpenInference, OpenTelemetry GenAI, OpenLLMetry).

Pure domain code: no Kafka, HTTP or Prometheus imports.
"""
