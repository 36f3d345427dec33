#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_python_arenas.py - a heap-only summary or tree of a default Python
run says that the objects sit in pymalloc's arenas, how much was mapped and
how to see them (issue 10 §4): 200,000 small strings are ~20 MiB of arenas
beside a heap of a few MiB. With --mmap, or for a run with
--python-allocators, there is nothing left out to say."""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import check, eq, main  # noqa: E402
from pyutil import SYS_PY  # noqa: E402

NOTE = "note: Python objects are not in this heap view: pymalloc keeps them in arenas"


def report(env, argv):
    cp = env.run_raw([env.tracker] + argv)
    eq(cp.returncode, 0, "%s: %s" % (argv, cp.stderr.decode(errors="replace")))
    return cp.stdout.decode()


def script(env):
    d = env.tmpdir("arena")
    p = os.path.join(d, "strings.py")
    with open(p, "w") as f:
        f.write("KEPT = [str(i) * 10 for i in range(200000)]\n")
    return p


def test_arenas_named(env):
    if not os.path.exists(SYS_PY):
        print("skip: no %s" % SYS_PY)
        return
    _, out, _ = env.run([SYS_PY, script(env)], env={"PYTHONDONTWRITEBYTECODE": "1"})
    s = json.loads(report(env, ["summary", "--json", out]))
    mapped = s["python_arenas_not_shown"]["mapped_peak_bytes"]
    check(16 << 20 <= mapped <= env.stats(out)["mmap_peak_bytes"], "arenas mapped: %d" % mapped)
    for cmd in (["summary"], ["tree"]):
        t = report(env, cmd + [out])
        lines = [ln for ln in t.splitlines() if ln.startswith(NOTE)]
        eq(len(lines), 1, "%s: one arenas note:\n%s" % (cmd, t[:1500]))
        mib = "%.1f MiB at their peak" % (mapped / float(1 << 20))
        check(mib in lines[0] and "--mmap" in lines[0] and "--python-allocators" in lines[0],
              "%s: the note has the figure (%s) and both ways: %s" % (cmd, mib, lines[0]))
        check(NOTE not in report(env, cmd + ["--mmap", out]), "%s --mmap: no note" % cmd)
    check("python_arenas_not_shown" not in json.loads(report(env, ["summary", "--json", "--mmap",
                                                                   out])), "JSON --mmap")


def test_other_mappings_not_called_arenas(env):
    """A mapping that is not an arena (a CUDA process reserves gigabytes of
    address space; here a 64 MiB anonymous mmap the script touches) is not
    counted as pymalloc's: the note's figure is the arenas' own peak, far
    below the 64 MiB, not the peak of every anonymous mapping."""
    if not os.path.exists(SYS_PY):
        print("skip: no %s" % SYS_PY)
        return
    d = env.tmpdir("arena_other")
    p = os.path.join(d, "big_map.py")
    with open(p, "w") as f:
        f.write("import mmap\nm = mmap.mmap(-1, 64 << 20)\nm[::4096] = b'x' * (16384)\n"
                "KEPT = [str(i) * 10 for i in range(200000)]\n")
    _, out, _ = env.run([SYS_PY, p], env={"PYTHONDONTWRITEBYTECODE": "1"})
    check(env.stats(out)["mmap_peak_bytes"] >= 64 << 20, "the 64 MiB mapping recorded")
    s = json.loads(report(env, ["summary", "--json", out]))
    arenas = s["python_arenas_not_shown"]["mapped_peak_bytes"]
    check(16 << 20 <= arenas < 48 << 20, "arenas' peak alone: %d" % arenas)


def test_python_allocators_no_note(env):
    if not os.path.exists(SYS_PY):
        print("skip: no %s" % SYS_PY)
        return
    _, out, _ = env.run([SYS_PY, script(env)], env={"PYTHONDONTWRITEBYTECODE": "1"},
                        extra=["--python-allocators"])
    check(NOTE not in report(env, ["summary", out]), "each object traced: nothing left out")


if __name__ == "__main__":
    sys.exit(main(globals()))
