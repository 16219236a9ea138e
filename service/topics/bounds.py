"""Bounds of ``n_topics`` (inclusive), shared by the configuration
(:class:`service.topics.config.TopicConfig`), the topic model and ``goldwatch topics fit``.

A module of its own, importing nothing: ``topics fit`` checks ``--n-topics`` against them when
the command line is parsed, so ``goldwatch --help`` would otherwise load pydantic with
:mod:`service.topics.config`.
"""

from __future__ import annotations

#: Fewest topics a model can have (inclusive).
N_TOPICS_MIN = 2
#: Most topics a model can have (inclusive).
N_TOPICS_MAX = 1000
