#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_python_memo_outer.py - the hybrid memo's key is kept per Python
level (src/python/py_stack.c, py_suffix_hash: each level's hash of itself
and all levels outside it, recomputed only from the outermost level that
changed): python/memo_outer.py allocates through the same leaf() and mid()
frames from two module-level lines alternately. Every leaked bytearray
buffer must sit under the line that made it (A + 1 bytes under @outer_a,
B + 1 under @outer_b), N / 2 of each, in the default mode and with
--python-allocators (whose objects take the stopped native walk)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import check, eq, main  # noqa: E402
from pyutil import SYS_PY, fixture, is_python, marker, need_python, pyrun, report  # noqa: E402

FX = "memo_outer.py"
N = 200
A, B = 100000 + 1, 200000 + 1  # bytearray's buffer holds one byte more


def check_lines(env, flags):
    need_python()
    _, out, v = pyrun(env, ["--python", SYS_PY] + flags + [fixture(FX), str(N)])
    eq(v.get("ran"), 1, "memo_outer.py ran")
    want = [("leaf", marker(FX, "leaf_alloc")), ("mid", marker(FX, "mid_call"))]
    outer = {marker(FX, "outer_a"): A, marker(FX, "outer_b"): B}
    got = {A: 0, B: 0}
    for g in report(env, "leaks", ["-n", "0", "--python-internals", out]):
        pys = [(f.get("function"), f.get("line")) for f in g["stack"] if is_python(f)]
        if pys[:2] != want or g["bytes"] < 1000 * g["count"]:
            continue  # with --python-allocators, also the bytearray objects
        check(len(pys) == 3 and pys[2][1] in outer,
              "%s: a buffer under no outer line: %s" % (" ".join(flags) or "hybrid", pys))
        size = outer[pys[2][1]]
        eq((g["bytes"], g["count"]), (size * (N // 2), N // 2),
           "%s: buffers under line %d" % (" ".join(flags) or "hybrid", pys[2][1]))
        got[size] += g["count"]
    eq(got, {A: N // 2, B: N // 2}, "buffers per outer line")


def test_hybrid(env):
    check_lines(env, [])


def test_hybrid_allocators(env):
    check_lines(env, ["--python-allocators"])


if __name__ == "__main__":
    sys.exit(main(globals()))
