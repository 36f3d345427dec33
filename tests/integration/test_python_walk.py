#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_python_walk.py - the Python frame walk that reuses the previous
walk's levels (src/python/py_stack.c, issue 12) gives exactly the stacks a
full walk gives: python/walk_reuse.py allocates from one frame at one
instruction reached from different callers, different lines of one caller
and different depths, back to back. In every Python mode (hybrid,
--python-only, each with and without --python-allocators) each path holds
exactly its own blocks: N buffers of its size (n + 1 bytes each), plus, with
--python-allocators, the N bytearray objects at the same line."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import check, eq, main  # noqa: E402
from pyutil import SYS_PY, fixture, is_python, marker, need_python, pyrun, report, show  # noqa: E402

FX = "walk_reuse.py"
A, B, C, D, N = 110000, 220000, 330000, 440000, 40
OBJ_MAX = 256  # a bytearray object's own block, with --python-allocators


def m(name):
    return marker(FX, name)


def paths():
    """(Python frames innermost first as (function, line), blocks, size)."""
    leaf = ("leaf", m("leaf_alloc"))
    return [
        ((leaf, ("two_lines", m("line_a")), ("main", m("main_two"))), N, A),
        ((leaf, ("two_lines", m("line_b")), ("main", m("main_two"))), N, B),
        ((leaf, ("other_caller", m("line_c")), ("main", m("main_other"))), N, C),
        ((leaf, ("deep", m("deep_leaf")), ("main", m("main_deep"))), N // 2, D),
        ((leaf, ("deep", m("deep_leaf")), ("deep", m("deep_rec")), ("main", m("main_deep"))),
         N // 2, D),
    ]


def check_paths(env, flags):
    need_python()
    _, out, v = pyrun(env, ["--python", SYS_PY] + flags + [fixture(FX)])
    eq(v.get("ran"), 1, "walk_reuse.py ran")
    leaks = report(env, "leaks", ["-n", "0", out])
    totals = {}
    for g in leaks:
        pys = tuple((f.get("function"), f.get("line")) for f in g["stack"] if is_python(f))
        for want, _, _ in paths():
            if pys[:len(want)] == want and (len(pys) == len(want) or pys[len(want)][0] != "deep"):
                totals[want] = totals.get(want, 0) + g["bytes"]
    objects = "--python-allocators" in flags
    for want, blocks, size in paths():
        got = totals.get(want, 0)
        lo = blocks * (size + 1)
        hi = lo + (blocks * OBJ_MAX if objects else 0)
        check(lo <= got <= hi, "%s: bytes leaked on the path %s: %d, want %s"
              % (" ".join(flags) or "hybrid", want, got,
                 lo if lo == hi else "%d..%d" % (lo, hi)))


def test_hybrid(env):
    check_paths(env, [])


def test_python_only(env):
    check_paths(env, ["--python-only"])


def test_hybrid_allocators(env):
    check_paths(env, ["--python-allocators"])


def test_python_only_allocators(env):
    check_paths(env, ["--python-only", "--python-allocators"])


if __name__ == "__main__":
    sys.exit(main(globals()))
