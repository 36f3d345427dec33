#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_jemalloc.py - jemalloc's non-standard API (mallocx, rallocx, xallocx,
dallocx, sdallocx) is counted per entry point with exact sizes. Nothing but
the program calls these, so the by_allocator entries are exact absolutely."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import alloc_entry, diff, eq, main  # noqa: E402

REPS = 4


def test_jemalloc_api(env):
    prog = env.prog("jemalloc_api")
    s, v = env.traced([prog, str(REPS)])
    s0, v0 = env.traced([prog, "0"])
    xsum = v["xallocx_sum"]  # what jemalloc itself returned from xallocx
    eq(v0["xallocx_sum"], 0, "xallocx_sum with 0 reps")
    # xallocx is a resize in place: a release plus an acquisition of the
    # size it returned (docs/FORMAT.md §4).
    want = {
        "mallocx": {"allocations": 3 * REPS, "frees": 0, "bytes": (100 + 200 + 4096) * REPS},
        "rallocx": {"allocations": REPS, "frees": REPS, "bytes": 5000 * REPS},
        "xallocx": {"allocations": REPS, "frees": REPS, "bytes": xsum},
        "dallocx": {"allocations": 0, "frees": REPS, "bytes": 0},
        "sdallocx": {"allocations": 0, "frees": 2 * REPS, "bytes": 0},
    }
    for name, w in want.items():
        eq(alloc_entry(s, name), w, "by_allocator[%s]" % name)
        eq(alloc_entry(s0, name), {"allocations": 0, "frees": 0, "bytes": 0},
           "by_allocator[%s] with 0 reps" % name)
    eq(diff(s, s0, "allocations"), 5 * REPS, "allocations difference")
    eq(diff(s, s0, "frees"), 5 * REPS, "frees difference")
    eq(diff(s, s0, "bytes_allocated"), (100 + 200 + 4096 + 5000) * REPS + xsum,
       "bytes_allocated difference")
    eq(diff(s, s0, "leaked_bytes"), 0, "leaked_bytes difference")
    eq(s["unmatched_frees"], 0, "unmatched_frees")


if __name__ == "__main__":
    sys.exit(main(globals()))
