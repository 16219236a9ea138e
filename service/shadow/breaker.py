"""Per-candidate admission control: a circuit breaker (the rate limit beside it is
:class:`service.pacing.TokenBucket`).

It is thread-safe (one lock, held for a few arithmetic operations) and reads time from an
injectable ``clock`` (monotonic seconds), so tests drive it with a fake clock.

Circuit breaker states (Nygard, "Release It!", 2007; the usual three-state machine)::

    closed --N consecutive failures--> open --cool-down elapsed--> half_open
    half_open --a probe succeeds--> closed
    half_open --a probe fails-----> open (a new cool-down starts)

In ``half_open`` at most ``half_open_probes`` calls are admitted; the others are refused as
if open. Every admitted call must end in exactly one :meth:`CircuitBreaker.record_success`,
:meth:`CircuitBreaker.record_failure` or :meth:`CircuitBreaker.release` (admitted but never
run), or a half-open breaker would wait forever for its probes. Outcomes reported while open
are ignored. An outcome is attributed to the state it arrives in, not the one its call was
admitted in: a call admitted while closed that fails during ``half_open`` re-opens the
breaker. The shadow runner bounds every call by its timeout, far below any sensible
cool-down, so such late outcomes are rare.

>>> now = [0.0]
>>> breaker = CircuitBreaker(failure_threshold=2, cooldown_s=10, clock=lambda: now[0])
>>> for _ in range(2):
...     admitted = breaker.allow()
...     breaker.record_failure()
>>> breaker.state, breaker.allow()
('open', False)
>>> now[0] = 10.0
>>> breaker.allow(), breaker.state
(True, 'half_open')
>>> breaker.record_success(); breaker.state
'closed'
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Literal

__all__ = ["BreakerState", "CircuitBreaker"]

BreakerState = Literal["closed", "open", "half_open"]
Clock = Callable[[], float]
#: Numeric code of each state for a gauge: 0 closed, 1 half-open, 2 open.
STATE_CODES: dict[str, int] = {"closed": 0, "half_open": 1, "open": 2}


class CircuitBreaker:
    """Stops calling a candidate that keeps failing, and probes it again after a cool-down.

    Args:
        failure_threshold: consecutive failures (N ≥ 1) that open a closed breaker.
        cooldown_s: seconds (> 0) an open breaker refuses calls before half-opening.
        half_open_probes: calls (M ≥ 1) admitted while half-open.
        clock: monotonic time in seconds (default :func:`time.monotonic`).

    Attributes:
        opened_total: how many times the breaker has opened (for a counter).

    Raises:
        ValueError: an argument is out of range.
    """

    def __init__(
        self,
        failure_threshold: int = 5,
        cooldown_s: float = 30.0,
        half_open_probes: int = 1,
        clock: Clock = time.monotonic,
    ) -> None:
        if failure_threshold < 1 or half_open_probes < 1 or not cooldown_s > 0:
            raise ValueError(
                "breaker needs failure_threshold >= 1, half_open_probes >= 1, cooldown_s > 0"
            )
        self.failure_threshold = failure_threshold
        self.cooldown_s = cooldown_s
        self.half_open_probes = half_open_probes
        self.opened_total = 0
        self._clock = clock
        self._lock = threading.Lock()
        self._state: BreakerState = "closed"
        self._failures = 0
        self._opened_at = 0.0
        self._probes = 0  # probes admitted in the current half-open episode

    @property
    def state(self) -> BreakerState:
        """The current state (an open breaker past its cool-down reads ``half_open``)."""
        with self._lock:
            self._maybe_half_open()
            return self._state

    def allow(self) -> bool:
        """Admit one call (True) or refuse it (False); O(1), never blocks on I/O."""
        return self.admit() is not None

    def admit(self) -> Literal["call", "probe"] | None:
        """Admit one call: ``"probe"`` when it takes a half-open probe slot (give it back with
        :meth:`release` if it never runs), ``"call"`` when closed, ``None`` when refused."""
        with self._lock:
            self._maybe_half_open()
            if self._state == "closed":
                return "call"
            if self._state == "half_open" and self._probes < self.half_open_probes:
                self._probes += 1
                return "probe"
            return None

    def release(self) -> None:
        """Give back an admitted call that never ran (its probe slot, when half-open)."""
        with self._lock:
            if self._state == "half_open" and self._probes > 0:
                self._probes -= 1

    def record_success(self) -> None:
        """An admitted call succeeded: reset the failure count; close a half-open breaker."""
        with self._lock:
            if self._state != "open":
                self._state = "closed"
                self._failures = 0

    def record_failure(self) -> None:
        """An admitted call failed: count it; open at the threshold or when half-open."""
        with self._lock:
            if self._state == "open":
                return
            self._failures += 1
            if self._state == "half_open" or self._failures >= self.failure_threshold:
                self._open()

    def _open(self) -> None:
        self._state = "open"
        self._opened_at = self._clock()
        self._probes = 0
        self.opened_total += 1

    def _maybe_half_open(self) -> None:
        if self._state == "open" and self._clock() - self._opened_at >= self.cooldown_s:
            self._state = "half_open"
            self._probes = 0
