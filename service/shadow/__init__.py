"""Shadow evaluation: run candidate retrievers on live questions, off the live path.

* :mod:`.agreement` — ranking agreement measures (overlap, Jaccard, RBO_ext, Kendall's τ,
  top-1, citation recall); pure maths.
* :mod:`.breaker` — per-candidate admission control: circuit breaker and token bucket.
* :mod:`.runner` — :class:`~.runner.ShadowRunner`: bounded queues, worker threads, timeouts,
  and the configuration models :class:`~.runner.ShadowConfig` / :class:`~.runner.CandidateConfig`.
* :mod:`.stage` — :class:`~.stage.ShadowStage`: the pipeline stage that submits each event and
  aggregates finished results into a report and per-batch observations for telemetry.
"""
