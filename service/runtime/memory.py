"""Memory tuning of a long-running process: the start-up heap out of the collector's reach,
glibc's ``mmap`` threshold kept at its default."""

from __future__ import annotations

import ctypes
import gc


def freeze_heap() -> None:
    """Move everything allocated so far (models, indexes, the gold set) out of the garbage
    collector's reach (``gc.freeze``): full collections then walk only what the live path
    allocates, not the start-up heap — about 25 µs/event less on novel traffic."""
    gc.collect()
    gc.freeze()


#: glibc ``mallopt`` parameter number of ``M_MMAP_THRESHOLD`` (``<malloc.h>``).
_M_MMAP_THRESHOLD = -3
#: Allocations from this size up get their own ``mmap`` and go back to the system when freed.
MMAP_THRESHOLD_BYTES = 128 * 1024


def fix_mmap_threshold(threshold: int = MMAP_THRESHOLD_BYTES) -> bool:
    """Keep glibc's ``mmap`` threshold at ``threshold`` bytes (its default) instead of letting
    it rise; return whether it was set (``False`` off glibc, e.g. musl or macOS).

    glibc raises the threshold to the size of each ``mmap``-ed block that is freed (up to
    32 MiB), so after the first checkpoint the service's large, short-lived buffers (the
    checkpoint's JSON, 0.3-1.4 MB each second; Kafka fetch responses, up to ~5 MB) are carved
    from the heap between long-lived allocations, and the holes they leave are not returned.
    Soak, 200,000 events at 2,000/s, same probe: the heap grew 81 -> 163 MB (free inside it
    5 -> 37 MB) and the end RSS was 454-463 MB; with the threshold fixed the heap grew 72 ->
    102 MB (free 3-8 MB), RSS 432 MB at the end (``MALLOC_MMAP_THRESHOLD_=131072``, the same
    setting). Setting it also fixes the trim threshold at its default (128 KiB), so the top
    of the heap is returned as it frees up.
    """
    try:
        libc = ctypes.CDLL("libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, threshold))
