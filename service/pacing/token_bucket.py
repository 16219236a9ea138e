"""A token bucket: at most ``rate`` operations per second on average, bursts of ``burst``.

Tokens refill continuously at ``rate`` per second up to ``burst``; an operation spends one
token per unit (a call, a record). Two ways to spend:

* :meth:`TokenBucket.try_take` — one token now or ``False``; never waits (the shadow runner's
  per-candidate rate limit, whose callers choose to drop or wait on their stop event);
* :meth:`TokenBucket.wait` then :meth:`TokenBucket.spend` — wait (bounded by a deadline) for
  at least one token, learn how many whole tokens there are, then spend what was used (the
  file source's ``rate``: a poll reads at most that many lines).

A token counts as whole when it is within 1e-9 of it: a refill over exactly ``1 / rate``
seconds must give one token although ``(t1 - t0) · rate`` can round to ``0.9999999999``.

>>> now = [0.0]
>>> bucket = TokenBucket(rate=2, burst=2, clock=lambda: now[0])
>>> [bucket.try_take() for _ in range(3)]
[True, True, False]
>>> now[0] = 0.5; bucket.try_take(), bucket.try_take()
(True, False)
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

__all__ = ["TokenBucket"]

#: Float dust forgiven when counting whole tokens (see the module docstring).
_DUST = 1e-9


class TokenBucket:
    """Admits at most ``rate`` tokens per second on average, bursts of up to ``burst``.

    Thread-safe (one lock; :meth:`wait` sleeps outside it).

    Args:
        rate: tokens per second (> 0).
        burst: bucket size in tokens (≥ 1); default ``max(1, rate)`` — one second's worth.
        tokens: tokens at the start, in ``[0, burst]``; default ``burst`` (starts full).
        clock: monotonic time in seconds.

    Raises:
        ValueError: ``rate <= 0``, ``burst < 1`` or ``tokens`` outside ``[0, burst]``.
    """

    def __init__(
        self,
        rate: float,
        burst: float | None = None,
        *,
        tokens: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        size = max(1.0, rate) if burst is None else burst
        if not rate > 0 or not size >= 1:
            raise ValueError(f"token bucket needs rate > 0 and burst >= 1, got {rate}, {size}")
        start = float(size) if tokens is None else float(tokens)
        if not 0 <= start <= size:
            raise ValueError(f"token bucket needs 0 <= tokens <= burst, got {tokens}")
        self.rate = float(rate)
        self.burst = float(size)
        self._clock = clock
        self._lock = threading.Lock()
        self._tokens = start
        self._last = clock()

    @property
    def tokens(self) -> float:
        """Tokens now (refilled to the clock's time), in ``[0, burst]`` up to float dust."""
        with self._lock:
            return self._refill()

    def try_take(self) -> bool:
        """Take one token if there is one; O(1), never waits."""
        with self._lock:
            if self._refill() >= 1.0 - _DUST:
                self._tokens -= 1.0
                return True
            return False

    def wait(
        self, want: int, deadline: float, sleep: Callable[[float], object] = time.sleep
    ) -> int:
        """Wait until there is a whole token or until ``deadline`` (clock seconds), whichever
        is first; return how many may be spent now: ``min(want, whole tokens)``, ≥ 0.

        Takes nothing: :meth:`spend` what was used (at most the number returned)."""
        with self._lock:
            tokens = self._refill()
        if tokens < 1.0 - _DUST:
            need = (1.0 - tokens) / self.rate
            sleep(max(0.0, min(need, deadline - self._clock())))
            with self._lock:
                tokens = self._refill()
        return min(want, int(tokens + _DUST))

    def spend(self, n: int) -> None:
        """Spend ``n`` tokens (≥ 0) that :meth:`wait` said were there."""
        with self._lock:
            self._tokens -= n

    def _refill(self) -> float:
        """Add the tokens earned since the last call, up to ``burst`` (caller holds the lock)."""
        now = self._clock()
        self._tokens = min(self.burst, self._tokens + (now - self._last) * self.rate)
        self._last = now
        return self._tokens
