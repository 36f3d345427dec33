#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_bounded.py - issue 10 sections 3 and 4: list reports stay bounded,
and "at the peak" is one instant of the quantity shown. (3) On a
program with 100 distinct leaking stacks (progs/many_leaks.c: stack k leaks
(k + 1) * 100 bytes), `leaks`, `tree` and `diff` show the largest 20 by
default (-n N, -n 0 = all) and then say, with exact figures, how many
stacks and bytes they left out, in text and in JSON; and --fail-on-leak
takes BYTES as a separate word and with K/M/G suffixes, while
`--fail-on-leak FILE` still names the capture. (4) With --mmap, the peak
is that of heap + mappings together (progs/peaks_apart.c), not the sum of
each space's own peak."""

import json
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import check, eq, eq_all, main  # noqa: E402

STACKS = 100


def size_of(k):
    return (k + 1) * 100


TOTAL = sum(size_of(k) for k in range(STACKS))  # 505,000


def hidden_bytes(shown):
    """Bytes of the stacks left out when the largest SHOWN are shown."""
    return sum(size_of(k) for k in range(STACKS - shown))


def grouped(n):
    return "{:,}".format(n)


def tracker(env, args, expect_rc=0, cwd=None):
    argv = [env.tracker] + list(args)
    cp = env.run_raw(argv, timeout=120, cwd=cwd)
    if expect_rc is not None and cp.returncode != expect_rc:
        raise AssertionError("%s\n  exit status %d, expected %d\n  stderr: %s"
                             % (" ".join(argv), cp.returncode, expect_rc,
                                cp.stderr.decode(errors="replace").strip()))
    return cp


def text(env, cmd, args, expect_rc=0):
    return tracker(env, [cmd, "--no-progress"] + list(args), expect_rc).stdout.decode()


def report(env, cmd, args):
    return json.loads(tracker(env, [cmd, "--json", "--no-progress"] + list(args)).stdout.decode())


def leaky(env):
    # Every live block a leak: no exit-time leak scan (test_leak_classes.py).
    _, out, values = env.run([env.prog("many_leaks")], env={"TRACKER_LEAK_SCAN": "0"})
    eq(values.get("stacks"), STACKS, "stacks the program leaked from")
    return out


LEAK_HEAD = re.compile(r"^([\d,]+) bytes in 1 block allocated at$", re.M)


def test_leaks_text(env):
    out = leaky(env)
    for args, shown in (([], 20), (["-n", "5"], 5), (["-n", "0"], STACKS),
                        (["-n", "100"], STACKS), (["-n", "1000"], STACKS)):
        t = text(env, "leaks", args + [out])
        heads = [int(x.replace(",", "")) for x in LEAK_HEAD.findall(t)]
        eq(heads, [size_of(k) for k in range(STACKS - 1, STACKS - 1 - shown, -1)],
           "leaks %s: the largest groups, largest first" % args)
        more = re.findall(r"^\.\.\. .*not shown.*$", t, re.M)
        if shown < STACKS:
            eq(more, ["... %d more stacks, %s bytes in %d blocks not shown (-n N shows more, "
                      "-n 0 all)" % (STACKS - shown, grouped(hidden_bytes(shown)),
                                     STACKS - shown)],
               "leaks %s: the line of what was left out" % args)
        else:
            eq(more, [], "leaks %s: nothing left out" % args)
        # The summary still counts everything.
        check("leaked:     %s bytes in 100 blocks from 100 stacks" % grouped(TOTAL) in t,
              "leaks %s: LEAK SUMMARY of everything:\n%s" % (args, t[-600:]))


def test_leaks_json(env):
    out = leaky(env)
    j = report(env, "leaks", [out])
    eq(len(j), 21, "default JSON entries (20 groups + what was left out)")
    eq([g["bytes"] for g in j[:20]], [size_of(k) for k in range(99, 79, -1)], "JSON groups")
    eq(j[20], {"bytes": hidden_bytes(20), "count": 80, "omitted": 80, "stack": []},
       "JSON: what was left out")
    eq(sum(g["bytes"] for g in j), TOTAL, "JSON: the entries add up to everything leaked")
    j = report(env, "leaks", ["-n", "0", out])
    eq(len(j), STACKS, "-n 0: every group")
    check(all("omitted" not in g for g in j), "-n 0: nothing left out")
    eq(sum(g["bytes"] for g in j), TOTAL, "-n 0: every byte")
    j = report(env, "leaks", ["-n", "3", out])
    eq(j[3], {"bytes": hidden_bytes(3), "count": 97, "omitted": 97, "stack": []}, "-n 3 JSON")
    eq(len(j), 4, "-n 3: JSON entries")


def leaf_lines(t):
    """The tree lines of the leak_D_U functions, or [other]/left-out lines."""
    return [ln for ln in t.splitlines() if re.search(r"\bleak_\d_\d\b", ln)]


def test_tree(env):
    out = leaky(env)
    t = text(env, "tree", ["--leaks", "--threshold", "0", out])
    eq(len(leaf_lines(t)), 20, "tree: lines of leaking functions by default\n" + t)
    more = re.findall(r"^.*\.\.\. \d+ more .*$", t, re.M)
    eq([m.strip() for m in more],
       ["... 80 more lines, %s bytes in 80 allocations not shown (-n N shows more, -n 0 all)"
        % grouped(hidden_bytes(20))], "tree: the line of what was left out")
    t = text(env, "tree", ["--leaks", "--threshold", "0", "-n", "0", out])
    eq(len(leaf_lines(t)), STACKS, "tree -n 0: every leaking function")
    check(" more lines, " not in t, "tree -n 0: nothing left out")
    j = report(env, "tree", ["--leaks", "--threshold", "0", out])
    eq(j["total_bytes"], TOTAL, "tree JSON total")
    # The node whose children are the leak_D_U functions.
    parents = []

    def walk(n):
        names = [c["function"] for c in n["children"]]
        if any(re.match(r"leak_\d_\d$", x or "") for x in names):
            parents.append(n)
        for c in n["children"]:
            walk(c)
    walk(j)
    eq(len(parents), 1, "one parent of the leaking functions")
    p = parents[0]
    eq(len(p["children"]), 20, "tree JSON: children shown")
    eq([c["total_bytes"] for c in p["children"]], [size_of(k) for k in range(99, 79, -1)],
       "tree JSON: the largest children, largest first")
    eq(p["omitted"], {"nodes": 80, "total_bytes": hidden_bytes(20), "total_count": 80},
       "tree JSON: what was left out")
    j = report(env, "tree", ["--leaks", "--threshold", "0", "-n", "0", out])
    parents.clear()
    walk(j)
    eq(len(parents[0]["children"]), STACKS, "tree JSON -n 0: every child")
    check("omitted" not in parents[0], "tree JSON -n 0: nothing left out")


def test_diff(env):
    after = leaky(env)
    _, before, _ = env.run([env.prog("many_leaks"), "none"])
    t = text(env, "diff", [before, after])
    heads = re.findall(r"^peak \+.*$", t, re.M)
    eq(len(heads), 20, "diff: changed stacks shown by default")
    h = hidden_bytes(20)
    eq(re.findall(r"^\.\.\. .*$", t, re.M),
       ["... 80 more changed stacks not shown: peak +%s bytes, leaked +%s bytes "
        "(-n N shows more, -n 0 all)" % (grouped(h), grouped(h))],
       "diff: the line of what was left out")
    t = text(env, "diff", ["-n", "0", before, after])
    eq(len(re.findall(r"^peak \+.*$", t, re.M)), STACKS, "diff -n 0: every stack")
    j = report(env, "diff", [before, after])
    eq(len(j), 21, "diff JSON entries by default")
    eq([r["leaked_after"] for r in j[:20]], [size_of(k) for k in range(99, 79, -1)],
       "diff JSON rows")
    eq(j[20], {"stack": [], "peak_before": 0, "peak_after": h, "peak_delta": h,
               "leaked_before": 0, "leaked_after": h, "leaked_delta": h, "omitted": 80},
       "diff JSON: what was left out")
    j = report(env, "diff", ["-n", "0", before, after])
    eq(len(j), STACKS, "diff JSON -n 0: every stack")


def test_summary(env):
    out = leaky(env)
    every = report(env, "summary", ["-n", "0", out])
    check("omitted" not in every, "summary -n 0: nothing left out")
    leakers = [r for r in every["locations"] if re.match(r"leak_\d_\d$", r["function"])]
    eq(len(leakers), STACKS, "summary -n 0: a row per leaking function")
    eq(sorted((r["own_bytes"], r["total_bytes"], r["own_count"], r["allocations"])
              for r in leakers),
       [(size_of(k), size_of(k), 1, 1) for k in range(STACKS)],
       "leaking rows: own = total bytes, 1 block live at the peak, 1 made")
    j = report(env, "summary", [out])
    eq([r["own_bytes"] for r in j["locations"]], [size_of(k) for k in range(99, 79, -1)],
       "summary JSON: the largest 20 rows by default")
    rest = len(every["locations"]) - 20
    eq(j["omitted"], {"locations": rest, "own_bytes": hidden_bytes(20), "own_count": 80,
                      "allocations": 80}, "summary JSON: what was left out")
    t = text(env, "summary", [out])
    eq(re.findall(r"^\.\.\. .*$", t, re.M),
       ["... %d more locations, %s bytes own at the peak not shown (-n N shows more, -n 0 all)"
        % (rest, grouped(hidden_bytes(20)))], "summary: the line of what was left out")


def test_summary_counts(env):
    """The allocation count column says which count it is, and both are
    there: stacks_peaks equal: alloc_a makes 4 blocks, live at the peak;
    alloc_b makes 2 after alloc_a's are freed, none live at the peak."""
    _, out, _ = env.run([env.prog("stacks_peaks"), "equal"])
    s = report(env, "summary", [out])
    rows = {r["function"]: r for r in s["locations"]}
    eq_all([((rows["alloc_a"]["own_count"], rows["alloc_a"]["allocations"]), (4, 4), "alloc_a"),
            ((rows["alloc_b"]["own_count"], rows["alloc_b"]["allocations"]), (0, 2), "alloc_b")])
    t = text(env, "summary", [out])
    check("at peak: own blocks live at the peak; allocations: made here over the whole run" in t,
          "summary legend:\n" + t)
    line = [ln for ln in t.splitlines() if "alloc_b (" in ln]
    eq(len(line), 1, "alloc_b row")
    eq(line[0].split()[4:6], ["0", "2"], "alloc_b: at peak, allocations columns")


def test_fail_on_leak_bytes(env):
    out = leaky(env)

    def fails(args, rc, limit=None):
        cp = tracker(env, ["leaks", "--no-progress"] + args, rc)
        err = cp.stderr.decode()
        if rc == 1:
            check("%d bytes leaked" % TOTAL in err and "limit of %d bytes" % limit in err,
                  "%s: message %r" % (args, err))
        return cp

    fails(["--fail-on-leak", "1000", out], 1, 1000)
    fails(["--fail-on-leak", str(TOTAL), out], 0)
    fails(["--fail-on-leak", str(TOTAL - 1), out], 1, TOTAL - 1)
    fails(["--fail-on-leak=1K", out], 1, 1024)
    fails(["--fail-on-leak", "1k", out], 1, 1024)
    fails(["--fail-on-leak", "512K", out], 0)          # 524,288 >= 505,000
    fails(["--fail-on-leak", "493K", out], 1, 493 * 1024)  # 504,832 < 505,000
    fails(["--fail-on-leak=1M", out], 0)
    fails(["--fail-on-leak", "1MiB", out], 0)
    fails(["--fail-on-leak", "1G", out], 0)
    # After the file, too; and the bare flag still means "any leak".
    fails([out, "--fail-on-leak", "1000"], 1, 1000)
    fails(["--fail-on-leak", out], 1, 0)
    # A capture whose name reads as a size is still the capture.
    d = env.tmpdir("named")
    shutil.copy(out, os.path.join(d, "4096"))
    cp = tracker(env, ["leaks", "--no-progress", "--fail-on-leak", "4096"], 1, cwd=d)
    check("limit of 0 bytes" in cp.stderr.decode(), "file named 4096: %r" % cp.stderr)
    for bad in ("--fail-on-leak=12Q", "--fail-on-leak=K", "--fail-on-leak=-1",
                "--fail-on-leak=99999999999999999999"):
        cp = tracker(env, ["leaks", "--no-progress", bad, out], 2)
        check("--fail-on-leak" in cp.stderr.decode(), "%s: %r" % (bad, cp.stderr))


# ---- issue 10 section 4: a peak is one instant of the quantity shown ----------

def test_mmap_peak_one_instant(env):
    """progs/peaks_apart.c: the heap peaks (4,000,000 with 256 pages mapped)
    before the mappings do (1024 pages, heap 0). With --mmap, "at the peak"
    is heap + mappings at the instant their sum peaked, never the heap
    peak plus the mapping peak."""
    _, out, v = env.run([env.prog("peaks_apart")])
    page = v["page_size"]
    heap, small, big = 4000000, 256 * page, 768 * page
    both = heap + small  # 5,048,576 with 4 KiB pages
    check(both > small + big, "the sum peaks in phase 1")
    t = report(env, "tree", ["--mmap", "--threshold", "0", out])
    eq_all([(t["total_bytes"], both, "tree --mmap: live at the peak"),
            (t["total_count"], 41, "tree --mmap: blocks and mappings live at the peak")])
    txt = text(env, "tree", ["--mmap", out])
    m = re.search(r"^live at the peak: (\S+ \S+) in 41 allocations", txt, re.M)
    check(m, "tree --mmap text:\n" + txt)
    shown = m.group(1)  # "4.8 MiB": the figure as the reports round it
    check(re.search(r"peak heap \+ mapped %s \(%s bytes\) at" % (re.escape(shown), grouped(both)),
                    txt), "header names the peak of the sum:\n" + txt)
    s = report(env, "summary", ["--mmap", "-n", "0", out])
    rows = {r["function"]: r for r in s["locations"]}
    eq_all([(s["peak_heap_bytes"], heap, "summary: heap peak"),
            (s["peak_mmap_bytes"], small + big, "summary: mapping peak"),
            (s["peak_heap_mmap_bytes"], both, "summary: peak of heap + mappings"),
            (rows["grow_heap"]["own_bytes"], heap, "grow_heap at that peak"),
            (rows["map_small"]["own_bytes"], small, "map_small at that peak"),
            (rows.get("map_big", {}).get("own_bytes", 0), 0, "map_big: mapped after it")])
    # Without --mmap the heap peak alone, as before.
    eq(report(env, "tree", ["--threshold", "0", out])["total_bytes"], heap, "tree: heap peak")
    # diff of a capture against itself: the total peak is the same instant.
    d = text(env, "diff", ["--mmap", out, out])
    check("TOTAL: peak (heap + mapped) 0 B (%s -> %s)" % (shown, shown) in d,
          "diff --mmap total:\n" + d)
    # The page marks the instant of that peak, with its figure.
    html = os.path.join(env.tmpdir("fg"), "out.html")
    tracker(env, ["flamegraph", "--no-progress", "--mmap", "-o", html, out])
    with open(html) as f:
        page_text = f.read()
    check('"peak_heap":%d}' % both in page_text, "flamegraph --mmap marks the peak of the sum")



def test_python_page_says_what_it_leaves_out(env):
    """A default Python capture keeps its objects in pymalloc's arenas
    (mmap): the heap-only page says so and how to see them; with --mmap,
    or when each object was recorded, it has nothing to say."""
    py = "/usr/bin/python3"
    if not os.path.exists(py):
        from harness import Skip
        raise Skip("no /usr/bin/python3")
    code = "x = [str(i) * 3 for i in range(20000)]"
    _, out, _ = env.run([py, "-c", code])
    hint = "Python objects are not in this view"

    def page(args, cap):
        html = os.path.join(env.tmpdir("fg"), "out.html")
        tracker(env, ["flamegraph", "--no-progress", "-o", html] + args + [cap])
        with open(html) as f:
            return f.read()
    p = page([], out)
    check('"pymalloc_arenas":true' in p, "the page knows the arenas were left out")
    check(hint in p and "tracker flamegraph --mmap" in p, "the page says how to see them")
    _, each, _ = env.run([py, "-c", code], extra=["--python-allocators"])
    check('"pymalloc_arenas"' not in page([], each), "--python-allocators: nothing left out")



if __name__ == "__main__":
    sys.exit(main(globals()))
