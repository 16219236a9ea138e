"""Threads of the native maths libraries (OpenBLAS, MKL, OpenMP, torch) on the live path."""

from __future__ import annotations

import sys
from contextlib import AbstractContextManager, ExitStack, nullcontext
from typing import Any


def native_threads(threads: int | None) -> AbstractContextManager[Any]:
    """Limit the thread pools of the native maths libraries loaded so far to ``threads``
    (``None``: leave them as they are) until the returned context manager exits; entering
    it is not needed for the limit to hold (the service keeps it for the whole process).

    Why one thread on the live path: its matrix products are small (a micro-batch of ≤ 500
    questions × a gold set or corpus of hundreds to thousands of rows, 256 dimensions), too
    small to gain from threads, and OpenBLAS's worker threads busy-wait between calls.
    Measured on the production-shaped replay (``benchmarks.bench_production``, 20,000
    lines, two cores, same run): 582 µs of CPU per event with OpenBLAS's default threads
    (1,717 events/s per core, the process using ~1.9 cores) vs 373 µs with one thread
    (2,683 events/s), the wall time unchanged — the second core was burnt spinning, and in
    ``goldwatch serve`` it is the core the Kafka client, the HTTP server and other replicas
    need.

    Only libraries already loaded are limited (``threadpoolctl`` works on loaded shared
    objects): call it after the models are built. numpy's OpenBLAS, which the live path's
    matrix products use, is always loaded by then. A library loaded later keeps its default
    unless ``OPENBLAS_NUM_THREADS``/``OMP_NUM_THREADS`` say otherwise: after a start from the
    model cache (no fitting), scikit-learn's scipy OpenBLAS and OpenMP (``libgomp``) load at
    the first batch with their defaults; the live path does not run its products through
    them (the out-of-scope pipeline is applied in numpy), so they stay idle.

    torch (the ``minilm`` and ``sentence-transformers`` embedding backends), when loaded, is
    limited too, with ``torch.set_num_threads``: ``threadpoolctl`` lowers the OpenMP pool
    of the calling thread only (OpenMP's thread count is per thread), while the service
    embeds on its consumer thread, which would still run torch's products on one thread per
    core; torch's own setting is read by every thread at its first torch call. Measured
    once on a shared 2-core machine, 256 questions embedded by all-MiniLM-L6-v2 on another
    thread: 4.29 s of CPU with threadpoolctl alone (two threads, one spinning), 1.61 s with
    torch's limit.
    Its previous value is restored on exit (threads that already ran torch keep theirs).

    Args:
        threads: threads per library, ≥ 1, or ``None``.

    Returns:
        a context manager restoring the previous limits on exit (a no-op one for ``None``).
    """
    if threads is None:
        return nullcontext()
    from threadpoolctl import threadpool_limits  # a dependency of scikit-learn

    stack = ExitStack()
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "set_num_threads"):
        previous = int(torch.get_num_threads())  # before threadpoolctl lowers OpenMP's
        torch.set_num_threads(threads)
        stack.callback(torch.set_num_threads, previous)
    stack.enter_context(threadpool_limits(limits=threads))
    return stack
