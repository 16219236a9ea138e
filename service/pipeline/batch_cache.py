"""An LRU cache for per-question results computed in batches.

Live traffic repeats itself (the same questions, the same typos): the stages that cost the
most per question (topic assignment, out-of-scope scoring) compute each distinct question of a
micro-batch once, and remember recent answers across batches.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import islice
from typing import Generic, TypeVar

V = TypeVar("V")
_MISSING: object = object()


class BatchCache(Generic[V]):
    """Memoise ``compute(distinct_keys) -> values`` over batches, least recently used out.

    Args:
        size: most keys remembered (0 disables the cache; each batch is still de-duplicated).

    Raises:
        ValueError: ``size < 0``.

    >>> calls = []
    >>> cache = BatchCache[int](size=10)
    >>> def lengths(keys):
    ...     calls.append(list(keys))
    ...     return [len(k) for k in keys]
    >>> cache.get_many(["ab", "c", "ab"], lengths), cache.get_many(["c", "def"], lengths)
    ([2, 1, 2], [1, 3])
    >>> calls
    [['ab', 'c'], ['def']]
    """

    def __init__(self, size: int = 65_536) -> None:
        if size < 0:
            raise ValueError(f"size must be >= 0, got {size}")
        self.size = size
        # a plain dict in recency order (least recently used first): a hit is taken out and
        # put back at the end, where an OrderedDict's move_to_end relinks its neighbours'
        # nodes too (each a cache miss in a large, cold table)
        self._data: dict[str, V] = {}
        self.hits = self.misses = 0

    def clear(self) -> None:
        """Forget every remembered value (e.g. the model behind ``compute`` changed)."""
        self._data.clear()

    def get_many(self, keys: Sequence[str], compute: Callable[[list[str]], Sequence[V]]) -> list[V]:
        """Return one value per key, calling ``compute`` once on the distinct unknown keys.

        Raises:
            ValueError: ``compute`` returned a different number of values than keys.
        """
        data = self._data
        found: dict[str, V] = {}
        missing: list[str] = []
        take = data.pop
        for key in dict.fromkeys(keys):
            value = take(key, _MISSING)  # one look-up; values may be None
            if value is _MISSING:
                missing.append(key)
            else:
                found[key] = data[key] = value  # type: ignore[assignment]  # now the newest
        if missing:
            values = list(compute(missing))
            if len(values) != len(missing):
                raise ValueError("compute returned a different number of values than keys")
            found.update(zip(missing, values, strict=True))
            self._remember(missing, values)
        self.hits += len(keys) - len(missing)
        self.misses += len(missing)
        return list(map(found.__getitem__, keys))

    def _remember(self, keys: list[str], values: list[V]) -> None:
        if not self.size:
            return
        data = self._data
        data.update(zip(keys, values, strict=True))  # new keys: all missing, so appended
        over = len(data) - self.size
        if over > 0:  # the least recently used, first in the dict (one pass for all)
            for key in list(islice(data, over)):
                del data[key]

    def __len__(self) -> int:
        """How many keys are remembered (at most ``size``)."""
        return len(self._data)
