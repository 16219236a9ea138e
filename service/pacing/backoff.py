"""Capped exponential backoff, optionally with jitter.

Delay before retry ``n`` (0-based: the wait after the first failure is ``n = 0``)::

    d(n) = min(first_s · 2**n, max_s)                   (seconds)

With ``jitter`` the delay is a uniform draw from ``[d(n) / 2, d(n)]`` ("equal jitter",
M. Brooker, "Exponential Backoff And Jitter", AWS Architecture Blog, 2015): replicas that
failed together do not retry together, and a retry still waits at least half the schedule.

>>> Backoff(0.5, max_s=10.0).delay(0), Backoff(0.5, max_s=10.0).delay(5)
(0.5, 10.0)
>>> from itertools import islice
>>> list(islice(Backoff(0.5, max_s=10.0).delays(), 7))
[0.5, 1.0, 2.0, 4.0, 8.0, 10.0, 10.0]
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass

__all__ = ["Backoff"]


@dataclass(frozen=True)
class Backoff:
    """A retry schedule: ``first_s`` seconds, doubling each retry, capped at ``max_s``.

    Attributes:
        first_s: delay before the first retry, seconds (≥ 0, finite).
        max_s: cap of one delay, seconds (≥ 0; ``math.inf``: no cap). Applied before jitter.
        jitter: draw each delay uniformly from ``[d / 2, d]`` instead of ``d``.

    Raises:
        ValueError: ``first_s`` negative or not finite, or ``max_s`` negative or NaN.
    """

    first_s: float
    max_s: float = math.inf
    jitter: bool = False

    def __post_init__(self) -> None:
        if not (math.isfinite(self.first_s) and self.first_s >= 0) or not self.max_s >= 0:
            raise ValueError(
                f"backoff needs a finite first_s >= 0 and max_s >= 0, "
                f"got first_s={self.first_s}, max_s={self.max_s}"
            )

    def delay(self, retry: int, uniform: Callable[[float, float], float] = random.uniform) -> float:
        """Seconds to wait before retry ``retry`` (0-based, ≥ 0); in ``[0, max_s]``.

        ``uniform(a, b)`` draws the jitter (default :func:`random.uniform`); unused without
        ``jitter``.

        Raises:
            ValueError: ``retry < 0``.
        """
        if retry < 0:
            raise ValueError(f"retry must be >= 0, got {retry}")
        # 2.0**n raises OverflowError from n = 1024: the delay is past any cap by then
        if not self.first_s:
            grown = 0.0
        else:
            grown = self.first_s * 2.0**retry if retry < 1024 else math.inf
        capped = min(grown, self.max_s)
        return uniform(capped / 2, capped) if self.jitter else capped

    def delays(self) -> Iterator[float]:
        """The delays before retries 0, 1, 2, ... (endless; jittered with
        :func:`random.uniform` when ``jitter``)."""
        retry = 0
        while True:
            yield self.delay(retry)
            retry += 1
