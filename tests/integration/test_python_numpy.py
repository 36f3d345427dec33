#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_python_numpy.py - a real extension (issue 5): python/np_sites.py
keeps numpy arrays of known sizes made at known lines. Each array's data
buffer is one leak of exactly its size whose stack holds both the script's
Python frame at its line and numpy's native code (_multiarray_umath) below
it. Skips where /usr/bin/python3 cannot import numpy (Debian:
python3-numpy)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Skip, check, eq, eq_all, main  # noqa: E402
from pyutil import (SYS_PY, all_leaks_text, can_import, find_frame, fixture,  # noqa: E402
                    is_python, marker, need_python, pyrun, report, row, show)

# marker -> data bytes
ARRAYS = {"np_ones": 256 * 256 * 8, "np_zeros": 100000 * 4, "np_empty": 300 * 1000,
          "np_mul": 256 * 256 * 8}


def numpy_frame(f):
    m = (f.get("module") or "").lower()
    return not is_python(f) and ("_multiarray_umath" in m or "numpy" in m)


def test_numpy_arrays(env):
    need_python()
    if not can_import(SYS_PY, "numpy"):
        raise Skip("%s cannot import numpy (Debian: python3-numpy)" % SYS_PY)
    f = fixture("np_sites.py")
    _, out, v = pyrun(env, ["--python", SYS_PY, f], timeout=120)
    check("numpy" in v, "the script ran")
    # Hybrid stacks (--native) for numpy's native frames under the line;
    # by default (Python-first) the line itself owns each array.
    leaks = report(env, "leaks", ["-n", "0", "--native", out])
    plain = report(env, "leaks", ["-n", "0", out])
    s = report(env, "summary", ["-n", "0", out])
    checks = []
    for m, size in ARRAYS.items():
        line = marker(f, m)
        groups = [g for g in leaks if g["bytes"] == size
                  and find_frame(g["stack"], "arrays", line, f) is not None]
        check(len(groups) == 1, "one leak of %d bytes through arrays() line %d, got %d\n%s"
              % (size, line, len(groups), all_leaks_text(
                  [g for g in leaks if find_frame(g["stack"], "arrays", line) is not None])))
        g = groups[0]
        st = g["stack"]
        i = find_frame(st, "arrays", line, f)
        checks += [(g["count"], 1, "%s: blocks" % m),
                   (is_python(st[i]), True, "%s: arrays() is a Python frame" % m),
                   (any(numpy_frame(x) for x in st[:i]), True,
                    "%s: numpy's native frames below line %d:\n      %s" % (m, line, show(st, 30))),
                   (row(s, "arrays", line)["total_bytes"] >= size, True,
                    "%s: summary row of line %d holds the array" % (m, line)),
                   # (The array object itself, made at the same line, may
                   # merge into the group: a few dozen bytes.)
                   (len([x for x in plain if size <= x["bytes"] < size + 1024 and x["stack"]
                         and x["stack"][0]["function"] in ("arrays", "ones")
                         and find_frame(x["stack"], "arrays", line, f) is not None
                         and all(is_python(y) for y in x["stack"])]), 1,
                    "%s: one Python-only leak group by default" % m)]
    eq_all(checks)
    # np.ones is Python code in numpy itself: its frame sits between.
    g = [g for g in leaks if g["bytes"] == ARRAYS["np_ones"]
         and find_frame(g["stack"], "arrays", marker(f, "np_ones")) is not None][0]
    names = [x["function"] for x in g["stack"] if is_python(x)]
    eq(names[:2], ["ones", "arrays"], "Python frames of np.ones((256, 256))")


if __name__ == "__main__":
    sys.exit(main(globals()))
