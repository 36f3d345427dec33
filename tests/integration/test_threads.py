#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_threads.py - 100 threads x 100 allocations started together
(progs/threads.c): no record may be lost, every thread is seen."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import diff, eq, ge, main  # noqa: E402

T, M, S = 100, 100, 64


def test_hundred_threads(env):
    prog = env.prog("threads")
    s, _ = env.traced([prog, str(T), str(M), str(S)])
    # Same threads making no allocations: thread start-up costs cancel out.
    s0, _ = env.traced([prog, str(T), "0", str(S)])
    eq(diff(s, s0, "allocations"), T * M, "allocations difference")
    eq(diff(s, s0, "frees"), T * (M - 1), "frees difference")
    eq(diff(s, s0, "bytes_allocated"), T * M * S, "bytes_allocated difference")
    eq(diff(s, s0, "leaked_bytes"), T * S, "leaked_bytes difference (one block per thread)")
    eq(diff(s, s0, "leaked_allocations"), T, "leaked_allocations difference")
    eq(s["lost_events"], 0, "lost_events")
    eq(s0["lost_events"], 0, "lost_events (no allocations)")
    eq(s["unmatched_frees"], 0, "unmatched_frees")
    ge(s["threads"], T + 1, "threads (100 workers and main)")


if __name__ == "__main__":
    sys.exit(main(globals()))
