#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_eh_pages.py - issue 12, "Memory": the pages of the loaded objects'
unwind tables that the tracker's unwinder read (a plain run never reads
them) are given back to the system while the program runs, instead of
staying in its RSS for good (~14 MB of file pages on `import torch`,
libtorch_cpu's .eh_frame_hdr/.eh_frame the most). progs/eh_pages.c
allocates from 3,840 call sites of its own, then polls its own pagemap
until no page of its unwind tables is mapped (30 s at most: that is only
a hang detector), then allocates from 256 new call sites, whose rules are
read again from the page cache. Also with the tables in the code segment
(eh_pages_x, linked with -z noseparate-code), and with .eh_frame in the
writable segment under PT_GNU_RELRO (eh_pages_w), where the one page the
loader relocated must stay. Every stack is walked by both unwinders
(TRACKER_UNWIND_CHECK=1): giving the pages back must change no frame."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import eq, ge, main, unwind_clean  # noqa: E402

CALLS = 4096


def check(env, prog, exec_seg, anon=0):
    _, out, v = env.run([env.prog(prog)], env={"TRACKER_UNWIND_CHECK": "1"}, timeout=120)
    eq(v.get("eh_segment_exec"), exec_seg, "unwind tables in the code segment")
    eq(v.get("calls"), CALLS, "calls")
    ge(v.get("eh_pages", 0), 8, "pages of the unwind tables (the program is big enough)")
    ge(v.get("present_after_calls", 0), 1, "pages the unwinder read")
    eq(v.get("present_final"), 0, "pages of the unwind tables still mapped after %s polls"
       % v.get("polls"))
    eq(v.get("anon_final"), anon, "relocated pages of the unwind tables still there")
    eq(v.get("relocated_ok"), 1, "the relocated address in the tables")
    st = env.stats(out)
    ge(st["allocations"], CALLS, "allocations")
    unwind_clean(st, CALLS, "calls")
    eq(st["lost_events"], 0, "lost events")


def test_unwind_table_pages_given_back(env):
    check(env, "eh_pages", 0)


def test_unwind_table_pages_in_code_segment_given_back(env):
    """Linked without -z separate-code (CUDA's libraries are: their
    tables were ~18 MB of `import torch` 2.11's peak RSS): the tables'
    own whole pages go back, code pages never."""
    check(env, "eh_pages_x", 1)


def test_unwind_table_pages_in_relro_given_back(env):
    """.eh_frame in the writable segment, made read-only after relocation
    (PT_GNU_RELRO), away from .eh_frame_hdr: CUDA 13's libnvrtc and
    libnvJitLink (7 MB of `import torch` 2.11's peak RSS). Its page-cache
    pages go back; the one page the loader relocated (a CIE's absolute
    personality pointer) is a private copy, and stays, with its relocated
    value."""
    check(env, "eh_pages_w", 2, anon=1)


if __name__ == "__main__":
    sys.exit(main(globals()))
