#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_reports.py - `tracker summary`, `tree`, `leaks` and `diff` on
programs with known call stacks (progs/stacks_*.c): exact bytes at the peak
per location, exact leaked bytes and blocks with their symbolized stacks
(function, file, line), inlined frames, 1000-deep recursion and the depth
cap, where the peak is (equal peaks, a peak at the end, partial munmaps),
--fail-on-leak and suppressions, diff between two runs, capture sets
(--all) and bad input.

Expected line numbers come from "@name" marker comments in the program
sources, never from numbers written here."""

import json
import os
import random
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import check, eq, eq_all, ge, main  # noqa: E402

PROGS_SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "progs")


def marker(prog, name):
    """Line number of the "@name" marker comment in progs/PROG.c."""
    with open(os.path.join(PROGS_SRC, prog + ".c")) as f:
        for n, line in enumerate(f, 1):
            if re.search(r"@%s\b" % re.escape(name), line):
                return n
    raise AssertionError("marker @%s not found in %s.c" % (name, prog))


def tracker(env, args, expect_rc=0):
    """Runs `tracker ARGS...` (progress bars off); checks the status and
    returns the CompletedProcess."""
    argv = [env.tracker] + list(args)
    cp = env.run_raw(argv, timeout=120)
    if expect_rc is not None and cp.returncode != expect_rc:
        raise AssertionError("%s\n  exit status %d, expected %d\n  stderr: %s"
                             % (" ".join(argv), cp.returncode, expect_rc,
                                cp.stderr.decode(errors="replace").strip()))
    return cp


def report(env, cmd, args, expect_rc=0):
    """`tracker CMD --json ARGS...` parsed."""
    cp = tracker(env, [cmd, "--json", "--no-progress"] + list(args), expect_rc)
    try:
        return json.loads(cp.stdout.decode())
    except ValueError as e:
        raise AssertionError("tracker %s printed invalid JSON: %s\n%s"
                             % (cmd, e, cp.stdout[:2000])) from e


def text(env, cmd, args, expect_rc=0):
    return tracker(env, [cmd, "--no-progress"] + list(args), expect_rc).stdout.decode()


# These tests are about grouping and stacks of what is live at the end:
# without the exit-time leak scan every live block is a leak, as before it
# existed (test_leak_classes.py tests the classes).
NO_SCAN = {"TRACKER_LEAK_SCAN": "0"}


def capture(env, prog, args, extra=()):
    _, out, values = env.run([env.prog(prog)] + [str(a) for a in args], extra=extra, env=NO_SCAN)
    return out, values


def loc(summary, function):
    """The summary row of FUNCTION (exactly one)."""
    rows = [r for r in summary["locations"] if r["function"] == function]
    eq(len(rows), 1, "summary rows for %s" % function)
    return rows[0]


def frames(stack):
    return [(f["function"], os.path.basename(f["file"] or ""), f["line"]) for f in stack]


def leak_of(leaks, function):
    """The leak group whose innermost frame is FUNCTION (exactly one)."""
    groups = [g for g in leaks if g["stack"] and g["stack"][0]["function"] == function]
    eq(len(groups), 1, "leak groups allocated in %s" % function)
    return groups[0]


# ---- (a) a known chain ------------------------------------------------------

N, SIZE, LEAK = 10, 1000, 3


def chain_frames():
    p = "stacks_chain"
    return [("baz", p + ".c", marker(p, "baz_malloc")), ("bar", p + ".c", marker(p, "bar_call")),
            ("foo", p + ".c", marker(p, "foo_call")), ("main", p + ".c", marker(p, "main_call"))]


def test_summary_chain(env):
    out, _ = capture(env, "stacks_chain", [N, SIZE, LEAK])
    s = report(env, "summary", ["-n", "0", out])
    want = chain_frames()
    rows = {f: loc(s, f) for f, _, _ in want}
    checks = [(s["peak_heap_bytes"], N * SIZE, "peak_heap_bytes")]
    for function, file, line in want:
        r = rows[function]
        checks += [
            (os.path.basename(r["file"]), file, "%s file" % function),
            (r["line"], line, "%s line" % function),
            (os.path.basename(r["module"]), "stacks_chain", "%s module" % function),
            (r["total_bytes"], N * SIZE, "%s total_bytes at the peak" % function),
            (r["own_bytes"], N * SIZE if function == "baz" else 0, "%s own_bytes" % function),
            (r["allocations"], N if function == "baz" else 0, "%s allocations" % function),
        ]
    eq_all(checks)
    eq(s["locations"][0]["function"], "baz", "top location")
    # The table: a header naming the process, baz on the first row.
    t = text(env, "summary", [out])
    check("pid " in t.splitlines()[0], "summary header: %r" % t.splitlines()[0])
    first = [ln for ln in t.splitlines() if "stacks_chain.c:" in ln][0]
    check(re.search(r"\bbaz \(stacks_chain\.c:%d\) \[stacks_chain\]" % want[0][2], first),
          "first table row: %r" % first)


def test_leaks_chain(env):
    out, _ = capture(env, "stacks_chain", [N, SIZE, LEAK])
    leaks = report(env, "leaks", [out])
    g = leak_of(leaks, "baz")
    eq_all([(g["bytes"], LEAK * SIZE, "leaked bytes"), (g["count"], LEAK, "leaked blocks"),
            (frames(g["stack"])[:4], chain_frames(), "leak stack, innermost first")])
    eq(sum(x["bytes"] for x in leaks), LEAK * SIZE, "total leaked bytes")
    t = text(env, "leaks", [out])
    check("3,000 bytes in 3 blocks allocated at" in t, "valgrind-style header:\n" + t)
    check(re.search(r"^    at baz \(stacks_chain\.c:\d+\) \[stacks_chain\]$", t, re.M),
          "frame line:\n" + t)
    check("LEAK SUMMARY" in t, "leak summary:\n" + t)


def test_tree_chain(env):
    out, _ = capture(env, "stacks_chain", [N, SIZE, LEAK])
    t = report(env, "tree", ["--threshold", "0", out])
    eq(t["total_bytes"], N * SIZE, "tree total at the peak")

    def find(nodes, name, path=()):
        for n in nodes:
            if n["function"] == name:
                return n, path
            r = find(n["children"], name, path + (n["function"],))
            if r:
                return r
        return None

    baz, path = find(t["children"], "baz")
    eq_all([(baz["total_bytes"], N * SIZE, "baz total"), (baz["self_bytes"], N * SIZE, "baz self"),
            (baz["self_count"], N, "baz self_count"),
            (list(path[-3:]), ["main", "foo", "bar"], "baz's callers")])
    inv = report(env, "tree", ["--inverted", "--threshold", "0", out])
    top = [n for n in inv["children"] if n["function"] == "baz"]
    eq(len(top), 1, "baz at the root of the inverted tree")
    eq(top[0]["total_bytes"], N * SIZE, "inverted baz total")
    eq(report(env, "tree", ["--leaks", out])["total_bytes"], LEAK * SIZE, "tree --leaks total")
    eq(report(env, "tree", ["--allocated", out])["total_count"], N, "tree --allocated count")
    txt = text(env, "tree", [out])
    check(re.search(r"100\.00%.*main \(stacks_chain\.c", txt), "text tree:\n" + txt)
    check(re.search(r"\n.* {2,}baz \(stacks_chain\.c:\d+\)", txt), "indented baz:\n" + txt)


# ---- (b) inlined frames -------------------------------------------------------

def test_inlined_frames(env):
    out, _ = capture(env, "stacks_inline", [1000])
    g = leak_of(report(env, "leaks", [out]), "inl_leaf")
    p = "stacks_inline"
    eq(g["bytes"], 1001, "inline leak bytes")
    got = frames(g["stack"])[:4]
    eq([f for f, _, _ in got], ["inl_leaf", "inl_mid", "outer", "main"], "inlined frames")
    eq_all([(got[0][2], marker(p, "inl_leaf_malloc"), "inl_leaf line"),
            (got[1][2], marker(p, "inl_mid_call"), "inl_mid line (its call of inl_leaf)"),
            (got[2][2], marker(p, "outer_call"), "outer line (its call of inl_mid)"),
            (got[0][1], p + ".c", "inl_leaf file")])


# ---- (c) deep recursion and the depth cap -----------------------------------

def test_recursion_depth(env):
    p = "stacks_recurse"
    out, _ = capture(env, p, [1000, 4321], extra=["--depth", "1024"])
    g = leak_of(report(env, "leaks", [out]), "rec")
    st = frames(g["stack"])
    recs = [f for f in st if f[0] == "rec"]
    eq_all([(g["bytes"], 4321, "leaked bytes"), (len(recs), 1000, "rec frames"),
            (st[0][2], marker(p, "rec_malloc"), "innermost rec line"),
            (set(f[2] for f in st[1:1000]), {marker(p, "rec_call")}, "recursive call lines"),
            (st[1000][:1], ("main",), "caller of the outermost rec"),
            (st[1000][2], marker(p, "main_call"), "main line")])
    # The summary counts a recursive stack once per location: rec's call
    # line is on the stack 999 times, yet its total is the block once.
    s = report(env, "summary", [out])
    rows = {r["line"]: r for r in s["locations"] if r["function"] == "rec"}
    eq(sorted(rows), sorted([marker(p, "rec_malloc"), marker(p, "rec_call")]), "rec rows")
    bottom, call = rows[marker(p, "rec_malloc")], rows[marker(p, "rec_call")]
    eq_all([(bottom["own_bytes"], 4321, "rec own"), (bottom["total_bytes"], 4321, "rec total"),
            (bottom["allocations"], 1, "rec allocations"),
            (call["own_bytes"], 0, "rec call line own"),
            (call["total_bytes"], 4321, "rec call line total (once)")])

    out, _ = capture(env, p, [1000, 4321])
    g = leak_of(report(env, "leaks", [out]), "rec")
    eq(len(g["stack"]), 128, "stack length at the default depth cap")
    eq(set(f["function"] for f in g["stack"]), {"rec"}, "functions of the cut stack")
    check("outer frames may be missing" in text(env, "leaks", [out]), "cut stack noted")


# ---- (d) where the peak is ---------------------------------------------------

def test_peak_equal_first_counts(env):
    out, _ = capture(env, "stacks_peaks", ["equal"])
    s = report(env, "summary", [out])
    eq_all([(s["peak_heap_bytes"], 4000, "peak"),
            (loc(s, "alloc_a")["own_bytes"], 4000, "alloc_a own at the (first) peak"),
            (loc(s, "alloc_a")["line"], marker("stacks_peaks", "alloc_a_malloc"), "alloc_a line"),
            (loc(s, "alloc_b")["own_bytes"], 0, "alloc_b own at the peak"),
            (loc(s, "alloc_b")["allocations"], 2, "alloc_b allocations")])


def test_peak_at_end(env):
    out, _ = capture(env, "stacks_peaks", ["end"])
    s = report(env, "summary", [out])
    eq_all([(s["peak_heap_bytes"], 15000, "peak"),
            (loc(s, "grow_end")["own_bytes"], 15000, "grow_end own at the peak"),
            (leak_of(report(env, "leaks", [out]), "grow_end")["bytes"], 15000, "leaked")])


def test_peak_partial_munmap(env):
    out, values = capture(env, "stacks_peaks", ["mmap"])
    P = values["page_size"]
    s = report(env, "summary", ["--mmap", out])
    eq_all([(s["peak_mmap_bytes"], 20 * P, "mapped peak"),
            (loc(s, "map_a")["own_bytes"], 10 * P, "map_a at the peak (16 pages less 6)"),
            (loc(s, "map_b")["own_bytes"], 10 * P, "map_b at the peak"),
            (loc(s, "map_a")["line"], marker("stacks_peaks", "map_a_mmap"), "map_a line")])
    # Without --mmap the mappings are not part of the heap report.
    check(not [r for r in report(env, "summary", [out])["locations"]
               if r["function"] in ("map_a", "map_b") and r["own_bytes"]],
          "mappings left out without --mmap")


# ---- (e) --fail-on-leak and suppressions ---------------------------------------

def test_fail_on_leak(env):
    leaky, _ = capture(env, "stacks_chain", [N, SIZE, LEAK])
    clean, _ = capture(env, "stacks_chain", [N, SIZE, 0])
    cp = tracker(env, ["leaks", "--no-progress", "--fail-on-leak", leaky], 1)
    err = cp.stderr.decode().strip().splitlines()
    eq(len(err), 1, "stderr lines for a failed leak check (%r)" % err)
    check(err[0].startswith("tracker: ") and "3000 bytes" in err[0], "message: %r" % err[0])
    tracker(env, ["leaks", "--no-progress", "--fail-on-leak", clean], 0)
    tracker(env, ["leaks", "--no-progress", "--fail-on-leak=%d" % (LEAK * SIZE), leaky], 0)
    tracker(env, ["leaks", "--no-progress", "--fail-on-leak=%d" % (LEAK * SIZE - 1), leaky], 1)
    eq(report(env, "leaks", [clean]), [], "leaks of a clean run")


def test_suppressions(env):
    leaky, _ = capture(env, "stacks_chain", [N, SIZE, LEAK])
    d = env.tmpdir("sup")
    for pattern in ("baz", "^ba*z$", "stacks_chain", "*chain.c"):
        path = os.path.join(d, "s.txt")
        with open(path, "w") as f:
            f.write("# LSan style\n\n  leak:%s  \n" % pattern)
        t = text(env, "leaks", ["--fail-on-leak", "--suppressions", path, leaky], 0)
        check("suppressed: 3,000 bytes in 3 blocks" in t, "%s: suppressed total:\n%s" % (pattern, t))
        eq(report(env, "leaks", ["--suppressions", path, leaky]), [], "%s: JSON" % pattern)
    with open(path, "w") as f:
        f.write("leak:nothing_matches_this\n")
    tracker(env, ["leaks", "--no-progress", "--fail-on-leak", "--suppressions", path, leaky], 1)
    with open(path, "w") as f:
        f.write("# ok\nleak:baz\nrace:baz\n")
    cp = tracker(env, ["leaks", "--suppressions", path, leaky], 2)
    err = cp.stderr.decode().strip().splitlines()
    eq(len(err), 1, "stderr lines for a bad suppressions file")
    check(err[0].startswith("tracker: ") and "s.txt:3:" in err[0], "message: %r" % err[0])


# ---- (f) diff ---------------------------------------------------------------

def test_diff(env):
    before, _ = capture(env, "stacks_chain", [N, SIZE, 3])
    after, _ = capture(env, "stacks_chain", [N, SIZE, 7])
    bigger, _ = capture(env, "stacks_chain", [N + 5, SIZE, 3])
    rows = report(env, "diff", [before, after])
    r = [x for x in rows if x["stack"] and x["stack"][0]["function"] == "baz"]
    eq(len(r), 1, "diff rows for baz")
    eq_all([(r[0]["leaked_before"], 3 * SIZE, "leaked before"),
            (r[0]["leaked_after"], 7 * SIZE, "leaked after"),
            (r[0]["leaked_delta"], 4 * SIZE, "leaked delta"),
            (r[0]["peak_delta"], 0, "peak delta"),
            (frames(r[0]["stack"])[:4], chain_frames(), "diff stack"),
            (rows[0]["stack"][0]["function"], "baz", "largest change first")])
    r = [x for x in report(env, "diff", [after, bigger]) if x["stack"][0]["function"] == "baz"][0]
    eq_all([(r["peak_delta"], 5 * SIZE, "peak delta"), (r["leaked_delta"], -4 * SIZE, "leak delta")])
    t = text(env, "diff", [before, after])
    check("leaked +3.9 KiB" in t and "TOTAL" in t, "diff text:\n" + t)


# ---- capture sets ------------------------------------------------------------

def test_all_captures(env):
    out = env.out_path("tree")
    env.run([env.prog("forker"), env.prog("leaker"), "3", "100", "4", "200", "5", "300"], out=out,
            env=NO_SCAN)
    only = report(env, "leaks", [out])
    eq(sum(g["bytes"] for g in only), 300, "leaks of the root capture alone")
    every = report(env, "leaks", ["--all", out])
    # Parent and children call leak() from different lines of main: one
    # group per line.
    in_leak = [g for g in every if g["stack"] and g["stack"][0]["function"] == "leak"]
    # Each forked image (two children and the one that execs) inherited the
    # parent's 3 blocks of 100 and never freed them: leaks of the two
    # children too, with no stack in their capture (docs/FORMAT.md §6); the
    # image that execs lost nothing (the exec released them: not listed).
    inherited = [g for g in every if not g["stack"]]
    eq_all([(sorted(g["bytes"] for g in in_leak), [300, 800, 800], "leak() groups"),
            (leak_of(every, "main")["bytes"], 5 * 300, "leaker's main"),
            (sum(g["bytes"] for g in inherited), 2 * 300, "inherited leaks of the forked images"),
            (sum(g["bytes"] for g in every), 300 + 1600 + 1500 + 600, "all leaks of the set")])
    t = report(env, "tree", ["--all", "--leaks", out])
    procs = [n for n in t["children"] if n.get("kind") == "process"]
    # Five images leak: the parent, the two forked children, the forked
    # image that execs (inherited blocks only) and the exec'd leaker.
    eq(len(procs), 5, "process roots")
    check(all(n["function"].startswith("pid ") for n in procs), "process labels")
    eq(t["total_bytes"], 3400 + 900, "tree --all --leaks total")


# ---- (g) bad input -------------------------------------------------------------

def expect_error(env, args, want_rc, what):
    cp = env.run_raw([env.tracker] + args, timeout=60)
    err = cp.stderr.decode(errors="replace")
    check(cp.returncode >= 0, "%s: killed by signal %d" % (what, -cp.returncode))
    eq(cp.returncode, want_rc, "%s: exit status (stderr %r)" % (what, err))
    lines = [ln for ln in err.splitlines() if ln.strip()]
    eq(len(lines), 1, "%s: lines on stderr (%r)" % (what, err))
    check(lines[0].startswith("tracker: "), "%s: message %r" % (what, lines[0]))


def test_threads_and_sizes(env):
    """summary's thread split and size histogram: 6 threads x 50 allocations
    of 3000 bytes (each keeps one) land in the 2048..4095 bucket and in six
    thread rows of exactly 50 allocations, 150000 bytes, 3000 leaked."""
    out, _ = capture(env, "threads", [6, 50, 3000])
    s = report(env, "summary", [out])
    workers = [t for t in s["threads"] if t["allocations"] == 50]
    eq(len(workers), 6, "worker thread rows (%r)" % s["threads"])
    for t in workers:
        eq(t["bytes_allocated"], 150000, "bytes per worker")
        eq(t["leaked_bytes"], 3000, "leaked per worker")
    names = {t["name"] for t in s["threads"]}
    check("trk-sampler" not in names, "the tracker's own thread is not listed")
    b = [h for h in s["size_histogram"] if h["min_size"] == 2048]
    eq(len(b), 1, "2048..4095 bucket")
    eq(b[0]["max_size"], 4095, "bucket upper bound")
    # libc may add a block of its own to this bucket; ours are all there.
    ge(b[0]["allocations"], 300, "allocations of 3000 bytes in the bucket")
    ge(b[0]["bytes"], 300 * 3000, "bytes of those allocations")


def test_bad_input(env):
    good, _ = capture(env, "stacks_chain", [2, 10, 1])
    other, _ = capture(env, "stacks_chain", [2, 10, 1])
    missing = os.path.join(env.tmp, "nope.bin")
    corrupt = os.path.join(env.tmp, "corrupt.bin")
    rnd = random.Random(7)
    with open(corrupt, "wb") as f:
        f.write(b"\x89TRK\r\n\x1a\n" + bytes(rnd.getrandbits(8) for _ in range(3000)))
    cut = os.path.join(env.tmp, "cut.bin")
    with open(good, "rb") as f:
        data = f.read()
    with open(cut, "wb") as f:
        f.write(data[:40])
    for cmd in ("summary", "tree", "leaks"):
        for path, what in ((missing, "missing"), (corrupt, "corrupt"), (cut, "cut header")):
            expect_error(env, [cmd, path], 1, "%s %s" % (cmd, what))
            expect_error(env, [cmd, "--json", path], 1, "%s --json %s" % (cmd, what))
        expect_error(env, [cmd, "--bogus", good], 2, "%s unknown option" % cmd)
        expect_error(env, [cmd], 2, "%s without a file" % cmd)
        # Several files are captures of one run (issue 10 §5): two runs' are refused.
        expect_error(env, [cmd, good, other], 2, "%s with two runs' files" % cmd)
        expect_error(env, [cmd, "--temp-allocs", "x", good], 2, "%s bad --temp-allocs" % cmd)
        expect_error(env, [cmd, "--debug-dir"], 2, "%s --debug-dir without a value" % cmd)
    expect_error(env, ["diff", good], 2, "diff with one file")
    expect_error(env, ["diff", good, missing], 1, "diff with a missing file")
    expect_error(env, ["diff", corrupt, good], 1, "diff with a corrupt file")
    expect_error(env, ["diff", "--bogus", good, good], 2, "diff unknown option")
    expect_error(env, ["summary", "-n", "x", good], 2, "summary bad -n")
    expect_error(env, ["tree", "--threshold", "200", good], 2, "tree bad --threshold")
    expect_error(env, ["leaks", "--fail-on-leak=x", good], 2, "leaks bad --fail-on-leak")
    expect_error(env, ["leaks", "--suppressions", missing, good], 2, "leaks missing suppressions")
    # A capture cut mid-way is a warning in the report, not an error.
    with open(cut, "wb") as f:
        f.write(data[:len(data) * 2 // 3])
    for cmd in ("summary", "tree", "leaks"):
        t = text(env, cmd, [cut])
        check("truncated" in t, "%s: truncation warning:\n%s" % (cmd, t))


if __name__ == "__main__":
    sys.exit(main(globals()))
