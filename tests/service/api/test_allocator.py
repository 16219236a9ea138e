"""The glibc ``mmap`` threshold the service fixes at start-up (see ``fix_mmap_threshold``).

Each check runs in a fresh interpreter: glibc serves even a large request from a free chunk
of the heap when one fits, so whether a block is ``mmap``-ed depends on what the process
freed before (a test session's heap is full of holes).
"""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc only")

#: Frees a 24 MiB block (glibc raises a dynamic threshold to 24 MiB), then prints how many more
#: ``mmap``-ed blocks glibc holds while a 16 MiB block is alive, and after it is freed (16 MiB:
#: far over the fixed threshold, and too large for a hole that importing left in the heap).
SCRIPT = """
import ctypes, sys
from service.runtime.memory import MMAP_THRESHOLD_BYTES, fix_mmap_threshold
class MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks",
                "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]
libc = ctypes.CDLL("libc.so.6")
libc.mallinfo2.restype = MallInfo2
if sys.argv[1] == "fix":
    assert fix_mmap_threshold()
big = bytearray(24 * 2**20)
del big
before = libc.mallinfo2().hblks
block = bytearray(128 * MMAP_THRESHOLD_BYTES)
during = libc.mallinfo2().hblks
del block
print(during - before, libc.mallinfo2().hblks - before)
"""


def mmapped_more(mode: str) -> tuple[int, int]:
    out = subprocess.run([sys.executable, "-c", SCRIPT, mode], capture_output=True, text=True)
    if "mallinfo2" in out.stderr:
        pytest.skip("glibc without mallinfo2")
    assert out.returncode == 0, out.stderr
    during, after = out.stdout.split()
    return int(during), int(after)


@pytest.mark.slow
def test_a_block_over_the_threshold_is_mmapped_even_after_a_larger_one_was_freed() -> None:
    assert mmapped_more("fix") == (1, 0)  # its own mapping, handed back when freed


@pytest.mark.slow
def test_without_it_glibc_raises_its_threshold_and_takes_the_block_from_the_heap() -> None:
    assert mmapped_more("plain") == (0, 0)
