"""The glibc ``mmap`` threshold the service fixes at start-up (see ``fix_mmap_threshold``).

Each check runs in a fresh interpreter: glibc serves even a large request from a free chunk
of the heap when one fits, so whether a block is ``mmap``-ed depends on what the process
freed before (a test session's heap is full of holes).
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

from service.runtime.memory import operator_thresholds

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
elif sys.argv[1] == "env":  # the operator's MALLOC_MMAP_THRESHOLD_ (32 MiB) is left alone
    assert not fix_mmap_threshold()
big = bytearray(24 * 2**20)
del big
before = libc.mallinfo2().hblks
block = bytearray(128 * MMAP_THRESHOLD_BYTES)
during = libc.mallinfo2().hblks
del block
print(during - before, libc.mallinfo2().hblks - before)
"""


def mmapped_more(mode: str, env: dict[str, str] | None = None) -> tuple[int, int]:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, mode],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
    )
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


@pytest.mark.slow
def test_an_operators_own_threshold_is_left_alone() -> None:
    # with 32 MiB from MALLOC_MMAP_THRESHOLD_, the 16 MiB block comes from the heap; had
    # serve fixed its 128 KiB over it, the block would be mmap-ed: (1, 0)
    assert mmapped_more("env", {"MALLOC_MMAP_THRESHOLD_": str(32 * 2**20)}) == (0, 0)


@pytest.mark.parametrize(
    ("environ", "chosen"),
    [
        ({}, None),
        ({"MALLOC_ARENA_MAX": "2"}, None),  # another allocator setting: serve still fixes
        ({"MALLOC_MMAP_THRESHOLD_": "4194304"}, "MALLOC_MMAP_THRESHOLD_"),
        ({"MALLOC_TRIM_THRESHOLD_": "33554432"}, "MALLOC_TRIM_THRESHOLD_"),
        ({"MALLOC_TRIM_THRESHOLD_": "1", "MALLOC_MMAP_THRESHOLD_": "1"}, "MALLOC_MMAP_THRESHOLD_"),
        ({"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=33554432"}, "GLIBC_TUNABLES"),
        ({"GLIBC_TUNABLES": "glibc.malloc.arena_max=2"}, None),
    ],
)
def test_which_variable_sets_the_thresholds(environ: dict[str, str], chosen: str | None) -> None:
    assert operator_thresholds(environ) == chosen
