"""The process wiring (the composition root below the CLI and the HTTP app).

* :mod:`service.runtime.live` — the live pipeline built from the frozen settings
  (:func:`~service.runtime.live.build_live`, :func:`~service.runtime.live.default_pipeline`).
* :mod:`service.runtime.process` — :class:`~service.runtime.process.Runtime`: engine, source,
  consumer thread, HTTP ingest and the status of one process.
* :mod:`service.runtime.memory` — heap freezing and glibc's ``mmap`` threshold.
* :mod:`service.runtime.reports` — the analytics, shadow, quality and harvest reports.

``service.api`` (HTTP) and the jobs import from here; nothing here imports ``service.api``.
"""
