"""Pacing of repeated work: retry delays (:mod:`.backoff`) and rate limits (:mod:`.token_bucket`).

Pure helpers (standard library only): the callers keep their own loops, exceptions and waits
(a stop event, ``time.sleep``), so a stop still interrupts a wait and tests still swap the clock.
"""

from service.pacing.backoff import Backoff
from service.pacing.token_bucket import TokenBucket

__all__ = ["Backoff", "TokenBucket"]
