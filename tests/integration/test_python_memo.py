#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_python_memo.py - the per-thread memo of hybrid stacks
(src/python/py_stack.c, issue 12) never lends one stack's id to another:
python/memo_native.py allocates from one Python instruction through two
native paths (bytearray and bytes) alternately. With --python-internals every leaked
group at that line holds blocks of one path only (bytearray's buffers of
A + 1 bytes or bytes objects of B + 33), and the totals are exact."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import check, eq, main  # noqa: E402
from pyutil import SYS_PY, fixture, is_python, marker, need_python, pyrun, report  # noqa: E402

FX = "memo_native.py"
N = 200
A, B = 100000 + 1, 200000 + 33  # bytearray's buffer; a bytes object with its header


def check_groups(env, flags):
    need_python()
    _, out, v = pyrun(env, ["--python", SYS_PY] + flags + [fixture(FX), str(N)])
    eq(v.get("ran"), 1, "memo_native.py ran")
    leaf = ("leaf", marker(FX, "leaf_alloc"))
    got = {A: 0, B: 0}
    for g in report(env, "leaks", ["-n", "0", "--python-internals", out]):
        pys = [(f.get("function"), f.get("line")) for f in g["stack"] if is_python(f)]
        if not pys or pys[0] != leaf or g["bytes"] < 1000 * g["count"]:
            continue  # with --python-allocators, also the bytearray objects
        size = A if g["bytes"] % A == 0 else B
        check(g["bytes"] % size == 0 and g["bytes"] // size == g["count"],
              "%s: one group mixes the two native paths: %d bytes in %d blocks"
              % (" ".join(flags) or "hybrid", g["bytes"], g["count"]))
        got[size] += g["count"]
    eq(got, {A: N // 2, B: N // 2}, "blocks per native path")


def test_hybrid(env):
    check_groups(env, [])


def test_hybrid_allocators(env):
    check_groups(env, ["--python-allocators"])


if __name__ == "__main__":
    sys.exit(main(globals()))
