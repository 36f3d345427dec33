#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_cxx_alloc.py - C++ operator new/delete in all twenty forms
(progs/cxx_forms.cpp) are recorded exactly once each, under the kinds new,
new[], delete and delete[], whoever defines them: libstdc++ (which calls
malloc underneath), jemalloc or tcmalloc (which do not: before these hooks
their C++ allocations were invisible). And a loaded allocator whose own
entry points are not hooked (tcmalloc's tc_*) is named once on stderr."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import alloc_entry, diff, eq, main  # noqa: E402

REPS = 50
# One repetition: the sizes of the new and new[] calls, in source order.
NEW = [11, 13, 128, 256, 15, 384]
NEW_ARRAY = [12, 14, 192, 320, 16, 448]
ZERO = {"allocations": 0, "frees": 0, "bytes": 0}


def check(env, name, warn=None):
    prog = env.prog(name)
    cp, out, v = env.run([prog, str(REPS)])
    eq(v.get("bad_alloc"), 1, "%s: std::bad_alloc thrown through the hook and caught" % name)
    s = env.stats(out)
    cp0, out0, _ = env.run([prog, "0"])
    s0 = env.stats(out0)
    want = {
        "new": {"allocations": len(NEW) * REPS, "frees": 0, "bytes": sum(NEW) * REPS},
        "new[]": {"allocations": len(NEW_ARRAY) * REPS, "frees": 0,
                  "bytes": sum(NEW_ARRAY) * REPS},
        "delete": {"allocations": 0, "frees": len(NEW) * REPS, "bytes": 0},
        "delete[]": {"allocations": 0, "frees": len(NEW_ARRAY) * REPS, "bytes": 0},
    }
    for kind, w in want.items():
        # Nothing but the program's own calls uses operator new here, once
        # started: tcmalloc's own constructor makes a few news before ours
        # runs, recorded since issue 11 (the same in both runs).
        base = alloc_entry(s0, kind)
        got = {k: v - base[k] for k, v in alloc_entry(s, kind).items()}
        eq(got, w, "%s: by_allocator[%s] over the run with 0 reps" % (name, kind))
        if name != "cxx_forms_tcmalloc":
            eq(base, ZERO, "%s: by_allocator[%s] with 0 reps" % (name, kind))
    n = (len(NEW) + len(NEW_ARRAY)) * REPS
    # Each block once: libstdc++'s inner malloc is not a second allocation.
    eq(diff(s, s0, "allocations"), n, "%s: allocations difference" % name)
    eq(diff(s, s0, "frees"), n, "%s: frees difference" % name)
    eq(diff(s, s0, "bytes_allocated"), (sum(NEW) + sum(NEW_ARRAY)) * REPS,
       "%s: bytes_allocated difference" % name)
    eq(s["unmatched_frees"], 0, "%s: unmatched_frees" % name)
    eq(s["lost_events"], 0, "%s: lost_events" % name)
    eq(diff(s, s0, "leaked_bytes"), 0, "%s: leaked_bytes difference" % name)
    err = cp.stderr.decode(errors="replace")
    lines = [l for l in err.splitlines() if "not recorded" in l]
    if warn:
        eq(len([l for l in lines if warn in l]), 1, "%s: one warning naming %s in %r"
           % (name, warn, err))
    else:
        eq(lines, [], "%s: no allocator warning" % name)


def test_cxx_forms_libstdcxx(env):
    check(env, "cxx_forms")


def test_cxx_forms_jemalloc(env):
    check(env, "cxx_forms_jemalloc")


def test_cxx_forms_tcmalloc(env):
    check(env, "cxx_forms_tcmalloc", warn="tcmalloc")


if __name__ == "__main__":
    sys.exit(main(globals()))
