#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_order_stress.py - total order across threads (progs/handoff.c).

Four threads in a ring hand every block they allocate to the next thread,
which frees it; with one shared arena the freed addresses are handed out
again at once, often to another thread. Six million events later the reader
must have put every free after the allocation it releases and before the
reuse of its address: any misordering shows up as unmatched frees, as a
wrong leak total, or as a live total outside what the program can hold."""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import diff, eq, ge, le, main  # noqa: E402

T, ITERS, LEAKS, ANCHORS = 4, 750000, 3, 16
# Must match progs/handoff.c.
SIZES = [1100, 24, 2000, 4000, 1500, 100, 3000, 1040]


def test_handoff_ring(env):
    prog = env.prog("handoff")
    t0 = time.monotonic()
    s, v = env.traced([prog, str(T), str(ITERS), str(LEAKS), str(ANCHORS)], timeout=150)
    took = time.monotonic() - t0
    s0, _ = env.traced([prog, str(T), "0", "0", str(ANCHORS)])
    print("    %d events in %.2f s (tracked run, including start-up)" % (s.get("events", 0), took))

    # The program saw its addresses move between threads, so the test did
    # exercise what it is about (a lower bound: the program's table is racy).
    ge(v["cross_thread_reuse"], T * ITERS // 100, "addresses reused across threads")
    leak_size = v["leak_size"]
    produced = sum(SIZES[(i + tid) % len(SIZES)] for tid in range(T) for i in range(ITERS))
    eq(s["unmatched_frees"], 0, "unmatched_frees")
    eq(s0["unmatched_frees"], 0, "unmatched_frees (baseline)")
    eq(s["lost_events"], 0, "lost_events")
    eq(diff(s, s0, "allocations"), T * ITERS + T * LEAKS, "allocations difference")
    eq(diff(s, s0, "frees"), T * ITERS, "frees difference")
    eq(diff(s, s0, "bytes_allocated"), produced + T * LEAKS * leak_size,
       "bytes_allocated difference")
    eq(diff(s, s0, "leaked_bytes"), T * LEAKS * leak_size, "leaked_bytes difference")
    eq(diff(s, s0, "leaked_allocations"), T * LEAKS, "leaked_allocations difference")
    # The anchors were all live at once behind a barrier.
    ge(s["peak_heap_bytes"], v["anchor_bytes"], "peak_heap_bytes vs anchors live together")
    ge(s0["peak_heap_bytes"], v["anchor_bytes"], "peak_heap_bytes (baseline) vs anchors")
    # Beyond the baseline the program never holds more than its queues, one
    # block in hand and one received per thread, plus its leaks.
    le(s["peak_heap_bytes"],
       s0["peak_heap_bytes"] + v["inflight_max_bytes"] + T * LEAKS * leak_size,
       "peak_heap_bytes upper bound")


if __name__ == "__main__":
    sys.exit(main(globals()))
