"""The near-duplicate index's band tables take new entries as ``np.insert`` put them.

``neardup._merged`` (issue 22: a stable sort of the two sorted runs) must give the very
arrays ``np.insert`` at ``np.searchsorted`` positions gave — keys and rows, new entries
before equal old ones, equal new ones in their order — so the tables, and every look-up
on them, are the same."""

from __future__ import annotations

import numpy as np

from service.harvest.neardup import _merged


def _inserted(
    keys: np.ndarray, rows: np.ndarray, more_keys: np.ndarray, more_rows: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The insert the index made before ``_merged``."""
    at = np.searchsorted(keys, more_keys)
    return np.insert(keys, at, more_keys), np.insert(rows, at, more_rows)


def test_merged_is_the_sorted_insert_with_ties_and_empty_tables() -> None:
    rng = np.random.default_rng(22)
    for trial in range(400):
        n, m = int(rng.integers(0, 60)), int(rng.integers(0, 60))
        span = int(rng.choice([3, 50, 2**63]))  # few distinct keys: many ties
        keys = np.sort(rng.integers(0, span, n, dtype=np.uint64))
        more_keys = np.sort(rng.integers(0, span, m, dtype=np.uint64))
        rows = rng.integers(0, 1_000, n).astype(np.intp)
        more_rows = rng.integers(0, 1_000, m).astype(np.intp)
        got, expected = _merged(keys, rows, more_keys, more_rows), _inserted(
            keys, rows, more_keys, more_rows)  # fmt: skip
        for mine, theirs in zip(got, expected, strict=True):
            assert mine.dtype == theirs.dtype, trial
            assert np.array_equal(mine, theirs), trial
