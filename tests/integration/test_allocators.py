#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_allocators.py - every allocation entry point is counted under its
own name with the exact requested bytes: the C API (progs/allocators.c) and
C++ operator new/delete in all forms (progs/cxx_new.cpp, built against the
shared libstdc++, where they are recorded as new/delete, and the static one,
where they are bound inside the program and reach the C allocator)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import alloc_entry, diff, eq, main  # noqa: E402

# One repetition of progs/allocators.c: allocator -> (allocations, frees,
# bytes). A realloc of a live block is a free plus an allocation under its
# own name; realloc(NULL, n) is only an allocation, realloc(p, 0) only a free.
C_PER_REP = {
    "malloc": (2, 0, 100 + 40),
    "calloc": (1, 0, 10 * 30),
    "realloc": (3, 3, 50 + 5000 + 20),
    "reallocarray": (2, 1, 7 * 9 + 11 * 9),
    "posix_memalign": (1, 0, 1000),
    "aligned_alloc": (2, 0, 512 + 128),
    "memalign": (1, 0, 333),
    "valloc": (1, 0, 777),      # the requested size, not the page it rounds to
    "pvalloc": (1, 0, 888),
    "free": (0, 8, 0),
    "free_sized": (0, 1, 0),
    "free_aligned_sized": (0, 1, 0),
}
# Entry points neither libc nor the loader call on their own: their counts
# are exact in absolute terms, not only as differences.
ABSOLUTE = {"reallocarray", "posix_memalign", "aligned_alloc", "memalign", "valloc",
            "pvalloc", "free_sized", "free_aligned_sized"}
REPS = 3


def test_c_allocators(env):
    prog = env.prog("allocators")
    s3, v3 = env.traced([prog, str(REPS)])
    s0, v0 = env.traced([prog, "0"])
    # The preload exports the C23 functions glibc 2.36 lacks.
    eq(v3.get("have_free_sized"), 1, "free_sized resolvable under tracker")
    eq(v3.get("have_free_aligned_sized"), 1, "free_aligned_sized resolvable under tracker")
    for name, (a, f, b) in C_PER_REP.items():
        want = {"allocations": a * REPS, "frees": f * REPS, "bytes": b * REPS}
        e3, e0 = alloc_entry(s3, name), alloc_entry(s0, name)
        got = {k: e3[k] - e0[k] for k in want}
        eq(got, want, "by_allocator[%s], %d reps minus 0 reps" % (name, REPS))
        if name in ABSOLUTE:
            eq(e3, want, "by_allocator[%s] absolute" % name)
    total_a = sum(v[0] for v in C_PER_REP.values()) * REPS
    total_f = sum(v[1] for v in C_PER_REP.values()) * REPS
    total_b = sum(v[2] for v in C_PER_REP.values()) * REPS
    eq(diff(s3, s0, "allocations"), total_a, "allocations difference")
    eq(diff(s3, s0, "frees"), total_f, "frees difference")
    eq(diff(s3, s0, "bytes_allocated"), total_b, "bytes_allocated difference")
    eq(diff(s3, s0, "leaked_bytes"), 0, "leaked_bytes difference (everything is freed)")
    eq(diff(s3, s0, "leaked_allocations"), 0, "leaked_allocations difference")
    eq(s3["unmatched_frees"], 0, "unmatched_frees")
    eq(s0["unmatched_frees"], 0, "unmatched_frees (0 reps)")
    eq(s3["lost_events"], 0, "lost_events")


# One repetition of progs/cxx_new.cpp. With the shared libstdc++ the calls
# reach the interposed operator new/delete and are recorded under new, new[],
# delete and delete[] (what libstdc++ asks malloc for underneath is not
# recorded again). With -static-libstdc++ operator new is bound inside the
# executable: unaligned forms reach malloc, aligned ones libstdc++'s aligned
# allocation path, whichever C aligned entry point it uses, every delete free.
CXX_UNALIGNED = [4, 100, 4, 50, 1000, 2000, 24]
CXX_ALIGNED = [128, 256, 512, 1024]
CXX_NEW = [4, 4, 1000, 24, 128, 512]          # new int, nothrow new, ::operator new ...
CXX_NEW_ARRAY = [100, 50, 2000, 256, 1024]    # new char[], new A64[2], ::operator new[] ...
ALIGNED_FAMILY = ("aligned_alloc", "posix_memalign", "memalign")


def check_cxx(env, name, static):
    prog = env.prog(name)
    reps = 5
    s5, _ = env.traced([prog, str(reps)])
    s0, _ = env.traced([prog, "0"])
    n = len(CXX_UNALIGNED) + len(CXX_ALIGNED)
    nbytes = sum(CXX_UNALIGNED) + sum(CXX_ALIGNED)
    eq(diff(s5, s0, "allocations"), n * reps, "%s: allocations difference" % name)
    eq(diff(s5, s0, "frees"), n * reps, "%s: frees difference" % name)
    eq(diff(s5, s0, "bytes_allocated"), nbytes * reps, "%s: bytes_allocated difference" % name)
    eq(diff(s5, s0, "leaked_bytes"), 0, "%s: leaked_bytes difference" % name)
    eq(s5["unmatched_frees"], 0, "%s: unmatched_frees" % name)

    def kdiff(kind):
        a, b = alloc_entry(s5, kind), alloc_entry(s0, kind)
        return {k: a[k] - b[k] for k in a}

    if not static:
        eq(kdiff("new"), {"allocations": len(CXX_NEW) * reps, "frees": 0,
                          "bytes": sum(CXX_NEW) * reps}, "%s: new difference" % name)
        eq(kdiff("new[]"), {"allocations": len(CXX_NEW_ARRAY) * reps, "frees": 0,
                            "bytes": sum(CXX_NEW_ARRAY) * reps}, "%s: new[] difference" % name)
        eq(kdiff("delete")["frees"], len(CXX_NEW) * reps, "%s: delete difference" % name)
        eq(kdiff("delete[]")["frees"], len(CXX_NEW_ARRAY) * reps, "%s: delete[] difference" % name)
        eq(kdiff("malloc")["allocations"], 0, "%s: malloc difference (new is not malloc)" % name)
        eq(kdiff("free")["frees"], 0, "%s: free difference (delete is not free)" % name)
        return
    m = kdiff("malloc")
    eq(m["allocations"], len(CXX_UNALIGNED) * reps,
       "%s: malloc allocations difference (plain, array and nothrow new)" % name)
    eq(m["bytes"], sum(CXX_UNALIGNED) * reps, "%s: malloc bytes difference" % name)
    al = [alloc_entry(s5, a) for a in ALIGNED_FAMILY]
    eq(sum(e["allocations"] for e in al), len(CXX_ALIGNED) * reps,
       "%s: aligned allocations (absolute, aligned new only)" % name)
    eq(sum(e["bytes"] for e in al), sum(CXX_ALIGNED) * reps, "%s: aligned bytes" % name)
    eq(kdiff("free")["frees"], n * reps, "%s: free() calls difference (every delete)" % name)


def test_cxx_new_delete(env):
    check_cxx(env, "cxx_new", static=False)


def test_cxx_new_delete_static_libstdcxx(env):
    check_cxx(env, "cxx_new_static", static=True)


if __name__ == "__main__":
    sys.exit(main(globals()))
