#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_python_procs.py - Python child processes (issue 5): a multiprocessing
Pool started with fork, spawn and forkserver (python/mp_pool.py), and a
script running another through subprocess.run([sys.executable, ...])
(python/sub_parent.py, python/sub_child.py). Every child writes a capture of
its own (<stem>.<pid>.bin); the worker function's Python frame, file and
line are in the worker's capture and only there, with the exact number of
blocks and bytes; `summary --all` adds them up over the whole set.

Expected lines come from "@name" markers in the fixtures."""

import glob
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import check, eq, eq_all, main  # noqa: E402
from pyutil import (SYS_PY, all_leaks_text, fixture, marker, need_python,  # noqa: E402
                    py_at, pyrun, report, rows)

TASKS, SIZE = 4, 2600000


def captures(out):
    """The root capture and its siblings <stem>.<pid>[.<n>].bin."""
    stem = out[:-len(".bin")]
    return [out] + sorted(p for p in glob.glob(stem + ".*.bin"))


def work_rows(env, cap, function, line):
    s = report(env, "summary", ["-n", "0", cap])
    return s, rows(s, function, line)


def run_pool(env, method):
    need_python()
    f = fixture("mp_pool.py")
    line = marker(f, "pool_work")
    _, out, v = pyrun(env, ["--python", SYS_PY, f, method], timeout=180)
    eq(v.get("tasks"), TASKS, "%s: tasks done" % method)
    caps = captures(out)
    check(len(caps) >= 3, "%s: captures of the root and two workers: %s" % (method, caps))
    per = {}
    for c in caps:
        s, r = work_rows(env, c, "work", line)
        if r:
            eq(len(r), 1, "%s: %s: rows of work()" % (method, c))
            per[c] = r[0]
    check(out not in per, "%s: the parent's capture has no work() row" % method)
    check(per, "%s: no capture has work() at line %d (captures: %s)" % (method, line, caps))
    # A worker keeps its blocks to its end: all are live at its peak, so the
    # work() line of each worker holds a whole number of blocks there, and
    # the workers together hold every task's.
    checks = [(sum(r["total_bytes"] for r in per.values()), TASKS * (SIZE + 1),
               "%s: work() bytes over the workers" % method)]
    for c, r in per.items():
        checks += [(os.path.basename(r["file"]), "mp_pool.py", "%s: %s: work() file" % (method, c)),
                   (r["total_bytes"] % (SIZE + 1), 0,
                    "%s: %s: work() bytes (%d) in whole blocks" % (method, c, r["total_bytes"]))]
    eq_all(checks)
    # Every block is a leak of its worker: fork and forkserver workers leave
    # through os._exit, a spawned worker's script (multiprocessing's -c
    # code) ends before its interpreter's teardown frees KEPT.
    n = 0
    for c in per:
        for g in py_at(report(env, "leaks", ["-n", "0", c]), "work", line):
            eq(g["bytes"], g["count"] * (SIZE + 1), "%s: %s: leaked work() blocks" % (method, c))
            n += g["count"]
    eq(n, TASKS, "%s: leaked work() blocks over the workers" % method)
    # --all: the whole set, one work() row with every task.
    s = report(env, "summary", ["--all", "-n", "0", out])
    r = rows(s, "work", line)
    eq(len(r), 1, "%s: --all rows of work()" % method)
    eq(r[0]["total_bytes"], TASKS * (SIZE + 1), "%s: --all work() bytes" % method)
    pids = {t["pid"] for t in s["threads"]}
    check(len(pids) >= 3, "%s: --all threads of several processes: %s" % (method, sorted(pids)))


def test_pool_fork(env):
    run_pool(env, "fork")


def test_pool_spawn(env):
    run_pool(env, "spawn")


def test_pool_forkserver(env):
    run_pool(env, "forkserver")


def test_subprocess_child(env):
    need_python()
    parent, child = fixture("sub_parent.py"), fixture("sub_child.py")
    _, out, v = pyrun(env, ["--python", SYS_PY, parent])
    eq(v.get("child_rc"), 0, "child's exit status")
    caps = captures(out)
    cline, pline = marker(child, "sub_child_alloc"), marker(parent, "sub_parent_alloc")
    found = {}
    for c in caps:
        s, r = work_rows(env, c, "child_work", cline)
        if r:
            found[c] = (s, r[0])
    eq(len(found), 1, "captures with child_work() (captures: %s)" % caps)
    c, (s, r) = next(iter(found.items()))
    check(c != out, "the child's frames are in a capture of its own")
    eq_all([(r["file"], child, "child_work file"),
            (r["total_bytes"], 3100000 + 1, "child_work bytes at the child's peak")])
    # The child's block is kept to the end of its script: a leak there.
    leaks = report(env, "leaks", ["-n", "0", c])
    g = py_at(leaks, "child_work", cline)
    eq([(x["bytes"], x["count"]) for x in g], [(3100000 + 1, 1)],
       "child_work leaks\n" + all_leaks_text(leaks))
    # The parent's capture: its own block, none of the child's.
    ps, pr = work_rows(env, out, "parent_work", pline)
    eq([x["total_bytes"] for x in pr], [1200000 + 1], "parent_work row")
    eq(rows(ps, "child_work"), [], "child_work rows in the parent's capture")
    s = report(env, "summary", ["--all", "-n", "0", out])
    eq_all([([x["total_bytes"] for x in rows(s, "child_work", cline)], [3100000 + 1],
             "--all child_work"),
            ([x["total_bytes"] for x in rows(s, "parent_work", pline)], [1200000 + 1],
             "--all parent_work")])


if __name__ == "__main__":
    sys.exit(main(globals()))
