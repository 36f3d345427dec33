#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_record_path.py - the hook-to-ring record path (issue 12): the
ALLOC/FREE fast path with its cached ring bounds, the slow path it falls
back to (ring end, ring full, no TSC fit yet), the writer's wakes, and the
writer's compression of ring pieces in place (progs/record_burst.c).

With the smallest ring (--buffer-kb 64) the ring wraps thousands of times
and fills whenever the writer is behind; every event must still arrive
exactly once, in order, and the program's errno must be untouched."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import diff, eq, main  # noqa: E402

T, N, W = 3, 200000, 256


def check(env, extra):
    prog = env.prog("record_burst")
    _, out, v = env.run([prog, str(T), str(N), str(W)], timeout=300, extra=extra)
    s = env.stats(out)
    _, out0, _ = env.run([prog, str(T), "0", str(W)], extra=extra)
    s0 = env.stats(out0)
    eq(v["errno_bad"], 0, "errno changed across malloc/free (%s)" % " ".join(extra))
    eq(s["lost_events"], 0, "lost_events")
    eq(s["unmatched_frees"], 0, "unmatched_frees")
    eq(diff(s, s0, "allocations"), T * N, "allocations difference")
    eq(diff(s, s0, "frees"), T * N, "frees difference")
    eq(diff(s, s0, "bytes_allocated"), v["bytes"], "bytes_allocated difference")
    eq(diff(s, s0, "leaked_bytes"), 0, "leaked_bytes difference")


def test_small_ring_exact(env):
    check(env, ["--buffer-kb", "64"])


def test_small_ring_sampled_exact(env):
    check(env, ["--buffer-kb", "64", "--sample-bytes", "4096"])


def test_default_ring_exact(env):
    check(env, [])


if __name__ == "__main__":
    sys.exit(main(globals()))
