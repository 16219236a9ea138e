"""Bounds of ``n_topics`` (inclusive) and the default floor of a supervised model's held-out
kappa, shared by the configuration
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

#: The default floor of the topic assignment's chance-corrected held-out agreement
#: (``analytics.topics.min_kappa``, :func:`service.topics.quality.kappa_uncalibrated`): 0.4,
#: the bottom of "moderate" agreement in Landis & Koch (1977, Biometrics 33(1):159–174:
#: 0.21–0.40 fair, 0.41–0.60 moderate).
DEFAULT_MIN_KAPPA = 0.4
