#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_realloc_chain.py - one block resized 1000 times (progs/realloc_chain.c):
every step is one free and one allocation of the new size, and because the
old block is released before the new one is counted, the peak is the largest
single size, not the sum of two."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import alloc_entry, diff, eq, ge, main  # noqa: E402

N = 1000


def chain(env, s0, d):
    prog = env.prog("realloc_chain")
    sn, _ = env.traced([prog, str(N), str(s0), str(d)])
    sz, _ = env.traced([prog, "0", str(s0), str(d)])
    chain_bytes = sum(s0 + i * d for i in range(1, N + 1))
    eq(diff(sn, sz, "allocations"), N, "allocations difference")
    eq(diff(sn, sz, "frees"), N, "frees difference")
    eq(diff(sn, sz, "bytes_allocated"), chain_bytes, "bytes_allocated difference")
    eq(diff(sn, sz, "leaked_bytes"), 0, "leaked_bytes difference")
    rn, rz = alloc_entry(sn, "realloc"), alloc_entry(sz, "realloc")
    eq(rn["allocations"] - rz["allocations"], N, "by_allocator[realloc].allocations difference")
    eq(rn["frees"] - rz["frees"], N, "by_allocator[realloc].frees difference")
    eq(rn["bytes"] - rz["bytes"], chain_bytes, "by_allocator[realloc].bytes difference")
    eq(sn["unmatched_frees"], 0, "unmatched_frees")
    return sn, sz


def test_growing_chain(env):
    s0, d = 100000, 1000
    sn, sz = chain(env, s0, d)
    # The block is far larger than anything libc allocates at start-up, so
    # both peaks are reached inside the chain, over the same baseline.
    ge(sn["peak_heap_bytes"], s0 + N * d, "peak_heap_bytes")
    eq(diff(sn, sz, "peak_heap_bytes"), N * d, "peak_heap_bytes difference")


def test_shrinking_chain(env):
    s0, d = 2000000, -1000
    sn, sz = chain(env, s0, d)
    # The first size is the largest: the chain adds nothing to the peak.
    ge(sn["peak_heap_bytes"], s0, "peak_heap_bytes")
    eq(diff(sn, sz, "peak_heap_bytes"), 0, "peak_heap_bytes difference")


def test_small_chain(env):
    # Small sizes stay inside the heap (no mremap): counts and bytes only.
    chain(env, 16, 8)


if __name__ == "__main__":
    sys.exit(main(globals()))
