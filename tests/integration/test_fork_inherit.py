#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_fork_inherit.py - a forked child's capture accounts for the heap it
inherited (progs/fork_inherit.c): the child's capture names its parent's
capture and the fork point (the FORK header TLV, docs/FORMAT.md §1), and the
reader replays the parent's events before the fork to seed the child's live
set. So the child freeing the parent's N blocks makes no unmatched frees,
its peak includes what it inherited, and its leaks are its own 3 blocks plus
whatever inherited block it never freed. Without the parent's capture the
child still reads, and says the inherited heap is unknown."""

import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import check, eq, main  # noqa: E402

N = 100
SIZES = sum(1000 + i for i in range(N))
BIG = 100000
OWN_LEAKED = 3 * 333


def run(env, n):
    prog = env.prog("fork_inherit")
    _, out, v = env.run([prog, str(n)])
    child = os.path.join(os.path.dirname(out), "out.%d.bin" % v["child"])
    check(os.path.exists(child), "child capture %s missing" % child)
    return env.stats(out), env.stats(child), child


def test_child_sees_inherited_heap(env):
    _, c, _ = run(env, N)
    _, c0, _ = run(env, 0)
    # The N frees of inherited blocks are matched.
    eq(c["unmatched_frees"], 0, "child unmatched_frees")
    eq(c["frees"], N + 8, "child frees (N inherited, 7 own, the big one)")
    # Inherited blocks are live, not allocations of the child.
    eq(c["allocations"], 11, "child allocations (big + 10)")
    eq(c["bytes_allocated"], BIG + 10 * 333, "child bytes_allocated")
    eq(c["inherited_allocations"] - c0["inherited_allocations"], N,
       "inherited_allocations, N blocks minus 0 blocks")
    eq(c["inherited_bytes"] - c0["inherited_bytes"], SIZES,
       "inherited_bytes, N blocks minus 0 blocks")
    eq(c["inherited_missing"], False, "inherited_missing")
    for st, n, sizes in ((c, N, SIZES), (c0, 0, 0)):
        other_n = st["inherited_allocations"] - n    # the parent's other live blocks
        other_b = st["inherited_bytes"] - sizes
        eq(st["leaked_allocations"], 3 + other_n,
           "child (N=%d) leaked_allocations: its 3 plus inherited blocks it kept" % n)
        eq(st["leaked_bytes"], OWN_LEAKED + other_b, "child (N=%d) leaked_bytes" % n)
        # Highest: everything inherited plus the big block, or (when the
        # parent had nothing of N) the big block with the child's 10.
        want = max(st["inherited_bytes"] + BIG, other_b + BIG + 10 * 333)
        eq(st["peak_heap_bytes"], want, "child (N=%d) peak_heap_bytes" % n)


def test_child_without_parent_capture(env):
    _, _, child = run(env, N)
    alone = os.path.join(env.tmpdir("alone"), os.path.basename(child))
    shutil.copy(child, alone)
    c = env.stats(alone)
    eq(c["inherited_missing"], True, "inherited_missing without the parent's capture")
    eq(c["inherited_allocations"], 0, "inherited_allocations without the parent's capture")
    eq(c["unmatched_frees"], N, "unmatched_frees without the parent's capture")
    cp = env.run_raw([env.tracker, "stats", alone])
    err = cp.stdout.decode(errors="replace") + cp.stderr.decode(errors="replace")
    check("inherited" in err and "unknown" in err,
          "stats says the inherited heap is unknown: %r" % err)


CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fuzz", "corpus", "reader")


def test_reader_replays_parent_up_to_fork(env):
    """Synthetic pair (tests/fuzz/make_corpus.py): the parent allocates 6
    blocks, frees one and reallocs one (release before the fork at seq 10,
    acquisition after it), frees another after the fork. The child inherits
    exactly the 4 blocks live at seq 10 (2200 bytes), frees two of them and
    one address it never had."""
    d = env.tmpdir("syn")
    for f in ("syn_fork_parent.bin", "syn_fork_child.bin"):
        shutil.copy(os.path.join(CORPUS, f), d)
    c = env.stats(os.path.join(d, "syn_fork_child.bin"))
    eq({k: c[k] for k in ("inherited_allocations", "inherited_bytes", "inherited_missing",
                          "allocations", "frees", "unmatched_frees", "leaked_allocations",
                          "leaked_bytes", "peak_heap_bytes")},
       {"inherited_allocations": 4, "inherited_bytes": 2200, "inherited_missing": False,
        "allocations": 1, "frees": 4, "unmatched_frees": 1, "leaked_allocations": 2,
        "leaked_bytes": 1300, "peak_heap_bytes": 2200}, "syn_fork_child stats")
    # A FORK TLV naming the file itself ends at the depth cap, as unknown.
    me = env.stats(os.path.join(CORPUS, "syn_fork_self.bin"))
    eq(me["inherited_missing"], True, "syn_fork_self: inherited_missing")


if __name__ == "__main__":
    sys.exit(main(globals()))
