#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_signal_alloc.py - a SIGALRM handler that allocates, firing every 50 us
while the main thread allocates in a loop (progs/sigalloc.c), so signals land
inside the interposer's own hooks. The program must finish and exit 0, and
every allocation must be either recorded or reported lost: none may vanish."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import diff, eq, ge, main  # noqa: E402

HANDLED = 5000


def test_allocating_signal_handler(env):
    prog = env.prog("sigalloc")
    s, v = env.traced([prog, str(HANDLED), "50"], timeout=90)
    s0, v0 = env.traced([prog, "0", "50"], timeout=60)
    eq(v0["handled"], 0, "signals without a timer")
    ge(v["handled"], HANDLED, "signals handled (main loop ended early?)")
    made = v["main_iters"] + v["handled"]  # each one malloc and one free
    allocs = diff(s, s0, "allocations")
    frees = diff(s, s0, "frees")
    lost = diff(s, s0, "lost_events")
    # Every call is an event that was either recorded or reported lost.
    eq(allocs + frees + lost, 2 * made,
       "allocations %d + frees %d + lost %d vs 2 x %d calls" % (allocs, frees, lost, made))
    # The main loop's own calls are never nested inside a hook: all recorded.
    ge(allocs, v["main_iters"], "main-thread allocations recorded")
    if lost == 0:
        eq(allocs, made, "allocations difference")
        eq(frees, made, "frees difference")
        eq(diff(s, s0, "leaked_bytes"), 0, "leaked_bytes difference (all freed)")
        eq(s["unmatched_frees"], 0, "unmatched_frees")


if __name__ == "__main__":
    sys.exit(main(globals()))
