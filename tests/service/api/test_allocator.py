"""The glibc ``mmap`` threshold the service fixes at start-up (see ``fix_mmap_threshold``)."""

from __future__ import annotations

import ctypes
import platform

import pytest

from service.api.runtime import MMAP_THRESHOLD_BYTES, fix_mmap_threshold

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc only")


class MallInfo2(ctypes.Structure):
    """``struct mallinfo2`` (glibc >= 2.33): ``hblks`` counts the live ``mmap``-ed blocks."""

    _fields_ = [
        (name, ctypes.c_size_t)
        for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
                     "uordblks", "fordblks", "keepcost")
    ]  # fmt: skip


def mmapped_blocks() -> int:
    libc = ctypes.CDLL("libc.so.6")
    if not hasattr(libc, "mallinfo2"):
        pytest.skip("glibc without mallinfo2")
    libc.mallinfo2.restype = MallInfo2
    return int(libc.mallinfo2().hblks)


def test_a_block_over_the_threshold_is_mmapped_even_after_a_larger_one_was_freed() -> None:
    assert fix_mmap_threshold()
    big = bytearray(4 * 2**20)  # freed: glibc would raise its threshold to 4 MiB
    del big
    before = mmapped_blocks()
    block = bytearray(2 * MMAP_THRESHOLD_BYTES)  # 256 KiB: over the fixed threshold
    assert mmapped_blocks() == before + 1
    del block
    assert mmapped_blocks() == before  # and handed back when freed


def test_a_block_under_the_threshold_comes_from_the_heap() -> None:
    assert fix_mmap_threshold()
    before = mmapped_blocks()
    block = bytearray(MMAP_THRESHOLD_BYTES // 4)
    assert mmapped_blocks() == before
    del block
