#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_mmap.py - anonymous mapping accounting through mmap, partial munmap
(front, back, middle hole, a range straddling the hole), mremap grow, shrink
and move, MAP_FIXED over live mappings, failing calls, and file-backed
mappings (also remapped) that must not count. The script and its page
arithmetic are in progs/mmaps.c."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import diff, eq_all, main  # noqa: E402


def test_mmap_family(env):
    prog = env.prog("mmaps")
    d = env.tmpdir("files")
    s1, v1 = env.traced([prog, "1", os.path.join(d, "f1")])
    s0, v0 = env.traced([prog, "0", os.path.join(d, "f0")])
    P = v1["page_size"]
    eq_all([
        # Differences hold even if something else in the process mapped
        # anonymous memory through the interposed mmap.
        (diff(s1, s0, "mmap_leaked_bytes"), 44 * P, "mmap_leaked_bytes difference"),
        (diff(s1, s0, "mmap_peak_bytes"), 148 * P, "mmap_peak_bytes difference"),
        # Nothing but the program maps through mmap, and in mode 0 only files:
        # the file mappings (80 pages, 64 of them kept to exit) count nowhere.
        (s0["mmap_peak_bytes"], 0, "mmap_peak_bytes with file mappings only"),
        (s0["mmap_leaked_bytes"], 0, "mmap_leaked_bytes with file mappings only"),
        (s1["mmap_peak_bytes"], 148 * P, "mmap_peak_bytes (100-page block over 48 live pages)"),
        (s1["mmap_leaked_bytes"], 44 * P, "mmap_leaked_bytes (36 pages of A, 8 of moved B)"),
        # mmap is not heap: the malloc-family figures do not move.
        (diff(s1, s0, "allocations"), 0, "allocations difference"),
        (diff(s1, s0, "leaked_bytes"), 0, "leaked_bytes difference"),
    ])


if __name__ == "__main__":
    sys.exit(main(globals()))
