#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_unwind_memo.py - the own unwinder's walk memo (src/capture/unwind.c)
where a stack holds one of the tracker's own frames mid-stack: a library's
constructor allocating inside dlopen, under the tracker's dlopen wrapper, as
libtorch's static constructors do on `import torch` (issue 12). Such memo
entries give their addresses from a list made when they were recorded
(memo_finish); every stack is compared with libunwind's
(TRACKER_UNWIND_CHECK=1), and the folded stacks must be the same as with
libunwind alone (TRACKER_UNWIND=0)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import check, eq, main, unwind_clean  # noqa: E402

LOADS = 20
PER_LOAD = 900  # the constructor's allocations (progs/unwind_dlctor_lib.c)


def run(env, extra_env):
    _, out, v = env.run([env.prog("unwind_dlctor"), str(LOADS), env.progdir],
                        env=extra_env, timeout=240)
    eq(v.get("done"), 1, "unwind_dlctor finished")
    return out


def test_constructor_stacks_match_libunwind(env):
    """Every stack of the constructor's allocations compared with
    libunwind's: none differs."""
    st = env.stats(run(env, {"TRACKER_UNWIND_CHECK": "1"}))
    unwind_clean(st, LOADS * PER_LOAD, "constructor allocations")


def folded(env, out):
    cp = env.run_raw([env.tracker, "export", "--format", "folded", "--allocated", "-o", "-", out])
    eq(cp.returncode, 0, "export status: %s" % cp.stderr.decode(errors="replace"))
    return sorted(cp.stdout.decode().splitlines())


def test_constructor_stacks_same_report(env):
    """The folded stacks name the constructor's frames under dlopen, without
    the wrapper, and are the same line for line as libunwind's alone."""
    own = folded(env, run(env, None))
    ref = folded(env, run(env, {"TRACKER_UNWIND": "0"}))
    leaf = [ln for ln in own if "ctor_leaf" in ln]
    check(len(leaf) > 0, "no stack through ctor_leaf: %r" % own[:5])
    check(all("dlctor_init" in ln and "dlopen" in ln for ln in leaf),
          "constructor stacks under dlopen: %r" % leaf[:3])
    eq(own, ref, "folded stacks, own unwinder vs libunwind")


if __name__ == "__main__":
    main(globals())
