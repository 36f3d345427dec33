#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_leak_classes.py - leak classes at exit (issue 11, docs/FORMAT.md §4a).

progs/leak_classes.c allocates each scenario through a function of its own
name and size: blocks reachable from data, bss, a static local, main's live
frame, a blocked thread's stack, a spinning thread's register, static TLS,
pthread-specific data and an anonymous mmap; blocks lost behind a dead frame
below the stack pointer, on a dead thread's stack, through a self-pointer, a
cycle and a leak graph (indirect children); one reached only inside. The
tracker's classes must be exactly those, and valgrind's memcheck (where
installed) must give the same bytes and blocks per scenario. Ordinary
programs lose nothing: --fail-on-leak passes on them."""

import json
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Skip, check, eq, eq_all, main  # noqa: E402

# function -> (class, bytes, blocks)
EXPECT = {
    "r_data": ("reachable", 1001, 1), "r_bss": ("reachable", 1002, 1),
    "r_static_local": ("reachable", 1003, 1), "r_main_frame": ("reachable", 1004, 1),
    "r_thread_stack": ("reachable", 1005, 1), "r_register": ("reachable", 1006, 1),
    "r_tls_main": ("reachable", 1007, 1), "r_tls_thread": ("reachable", 1008, 1),
    "r_tsd": ("reachable", 1009, 1), "r_mmap": ("reachable", 1010, 1),
    "r_child": ("reachable", 1011, 1),
    "d_below_sp": ("definite", 2001, 1), "d_dead_thread": ("definite", 2002, 1),
    "d_self": ("definite", 2003, 1), "d_cycle_head": ("definite", 2004, 1),
    "d_leader": ("definite", 2005, 1),
    "i_cycle_tail": ("indirect", 3001, 1), "i_child": ("indirect", 6004, 2),
    "i_grandchild": ("indirect", 3003, 1),
    "p_interior": ("possible", 4001, 1),
}
# A thread's dynamic TLS hangs from its DTV, a heap block its thread control
# block points into (dtv + 1): as valgrind says, only possibly lost. Main's
# DTV comes from the loader before malloc is ours: a root.
DYNTLS = {"r_dyntls_main": ("reachable", 1012, 1), "r_dyntls_thread": ("possible", 1013, 1)}
DEFINITE = (2001 + 2002 + 2003 + 2004 + 2005, 5)
INDIRECT = (3001 + 6004 + 3003, 4)


def tracker(env, args, expect_rc=0):
    cp = env.run_raw([env.tracker] + list(args), timeout=120)
    if expect_rc is not None and cp.returncode != expect_rc:
        raise AssertionError("%s\n  exit status %d, expected %d\n  stderr: %s"
                             % (" ".join(args), cp.returncode, expect_rc,
                                cp.stderr.decode(errors="replace").strip()))
    return cp


def leaks_json(env, args):
    return json.loads(tracker(env, ["leaks", "--json", "--no-progress"] + args).stdout.decode())


def summary(entries):
    s = [e["leak_summary"] for e in entries if "leak_summary" in e]
    eq(len(s), 1, "leak_summary entries")
    return s[0]


def by_function(entries):
    got = {}
    for e in entries:
        if not e.get("stack") or "class" not in e:
            continue
        fn = e["stack"][0]["function"]
        if fn in EXPECT or fn in DYNTLS or fn == "d_fork_child":
            prev = got.get(fn)
            check(prev is None or prev[0] == e["class"], "%s in two classes: %r" % (fn, e))
            b, n = (prev[1], prev[2]) if prev else (0, 0)
            got[fn] = (e["class"], b + e["bytes"], n + e["count"])
    return got


def run_classes(env):
    if os.uname().machine != "x86_64":
        raise Skip("the register scenario is x86-64 assembly")
    _, out, _ = env.run([env.prog("leak_classes")])
    return out


def test_exact_classes(env):
    out = run_classes(env)
    every = leaks_json(env, ["--kinds", "all", "-n", "0", out])
    eq(by_function(every), EXPECT, "class, bytes and blocks per scenario")
    s = summary(every)
    eq_all([((s["definite"]["bytes"], s["definite"]["count"]), DEFINITE, "definitely lost"),
            ((s["indirect"]["bytes"], s["indirect"]["count"]), INDIRECT, "indirectly lost"),
            (s["unclassified"]["count"], 0, "blocks not classified")])
    # valgrind's "11,012 (2,005 direct, 9,007 indirect) bytes": what each
    # definitely lost block leads (LEAK records' leaders).
    led = {e["stack"][0]["function"]: e["indirect_bytes"] for e in every
           if e.get("stack") and "indirect_bytes" in e}
    eq(led, {"d_leader": 6004 + 3003, "d_cycle_head": 3001}, "indirect bytes per leader")
    text = tracker(env, ["leaks", "--no-progress", out]).stdout.decode()
    check("11,012 (2,005 direct, 9,007 indirect) bytes in 1 block definitely lost" in text,
          "valgrind's direct/indirect heading:\n" + text)
    lc = env.stats(out)["leak_classes"]
    eq_all([((lc["definite"]["bytes"], lc["definite"]["count"]), DEFINITE, "stats: definite"),
            ((lc["indirect"]["bytes"], lc["indirect"]["count"]), INDIRECT, "stats: indirect"),
            (lc["scan_flags"], 0, "stats: the scan stopped every thread")])


def test_default_listing_and_gate(env):
    out = run_classes(env)
    listed = leaks_json(env, ["-n", "0", out])
    kinds = sorted({e["class"] for e in listed if "class" in e})
    eq(kinds, ["definite", "indirect"], "classes listed by default")
    text = tracker(env, ["leaks", "--no-progress", out]).stdout.decode()
    for line in ("definitely lost: 10,015 bytes in 5 blocks from 5 stacks",
                 "indirectly lost: 12,008 bytes in 4 blocks from 3 stacks",
                 "still reachable: 11,"):
        check(line in text, "%r in the summary:\n%s" % (line, text))
    check("2,003 bytes in 1 block definitely lost, allocated at" in text, "heading:\n" + text)
    lost = DEFINITE[0] + INDIRECT[0]
    tracker(env, ["leaks", "--no-progress", "--fail-on-leak", out], 1)
    tracker(env, ["leaks", "--no-progress", "--fail-on-leak=%d" % lost, out], 0)
    tracker(env, ["leaks", "--no-progress", "--fail-on-leak=%d" % (lost - 1), out], 1)
    # Only the possibly lost scenario and the threads' DTVs: under 6000.
    tracker(env, ["leaks", "--no-progress", "--fail-on-kinds", "possible",
                  "--fail-on-leak=6000", out], 0)
    tracker(env, ["leaks", "--no-progress", "--fail-on-kinds", "possible",
                  "--fail-on-leak=4000", out], 1)
    tracker(env, ["leaks", "--no-progress", "--kinds", "bogus", out], 2)


VG_RECORD = re.compile(r"^==\d+== ([\d,]+)(?: \(([\d,]+) direct, [\d,]+ indirect\))? bytes in "
                       r"([\d,]+) blocks are (definitely|indirectly|possibly) lost|"
                       r"^==\d+== ([\d,]+) bytes in ([\d,]+) blocks are (still reachable)")
VG_FRAME = re.compile(r"^==\d+==    (?:at|by) 0x[0-9A-F]+: (\w+)")
VG_KIND = {"definitely": "definite", "indirectly": "indirect", "possibly": "possible",
           "still reachable": "reachable"}


def valgrind_classes(env, argv):
    """valgrind's loss records, by the first scenario function in their stack."""
    cp = env.run_raw([shutil.which("valgrind"), "--leak-check=full", "--show-leak-kinds=all",
                      "--run-libc-freeres=no"] + argv, timeout=280)
    got, cur = {}, None
    for line in cp.stderr.decode(errors="replace").splitlines():
        m = VG_RECORD.match(line)
        if m:
            if m.group(1):
                cur = [VG_KIND[m.group(4)], int((m.group(2) or m.group(1)).replace(",", "")),
                       int(m.group(3).replace(",", ""))]
            else:
                cur = [VG_KIND[m.group(7)], int(m.group(5).replace(",", "")),
                       int(m.group(6).replace(",", ""))]
            continue
        f = VG_FRAME.match(line)
        if f and cur and (f.group(1) in EXPECT or f.group(1) in DYNTLS):
            prev = got.get(f.group(1), (cur[0], 0, 0))
            got[f.group(1)] = (cur[0], prev[1] + cur[1], prev[2] + cur[2])
            cur = None
        elif not line.strip("= 0123456789"):
            cur = None
    return got


def test_valgrind_agrees(env):
    if not shutil.which("valgrind"):
        raise Skip("valgrind not installed")
    out = run_classes(env)
    eq(by_function(leaks_json(env, ["--kinds", "all", "-n", "0", out])),
       valgrind_classes(env, [env.prog("leak_classes")]), "tracker vs valgrind per scenario")


def dyntls_lib(env):
    lib = os.path.join(env.progdir, "libleak_dyntls_lib.so")
    if not os.path.exists(lib):
        raise Skip("libleak_dyntls_lib.so not built")
    return lib


def test_dynamic_tls(env):
    argv = [env.prog("leak_classes"), "dyntls", dyntls_lib(env)]
    _, out, _ = env.run(argv)
    got = by_function(leaks_json(env, ["--kinds", "all", "-n", "0", out]))
    eq(got, DYNTLS, "blocks held only by dynamic TLS")
    if shutil.which("valgrind"):
        eq(got, valgrind_classes(env, argv), "tracker vs valgrind, dynamic TLS")


def test_fork_child_leak(env):
    _, out, _ = env.run([env.prog("leak_classes"), "fork"])
    every = leaks_json(env, ["--all", "--kinds", "all", "-n", "0", out])
    eq(by_function(every).get("d_fork_child"), ("definite", 2006, 1), "the child's leak")
    tracker(env, ["leaks", "--no-progress", "--all", "--fail-on-leak", out], 1)


def test_sampled_capture_same_classes(env):
    """--sample-bytes records every event but writes call-site STACK
    records: the exit scan, reading that capture back, must class every
    block as it does from a full one (the scan skips STACK records itself
    and decodes format 4's compact ALLOC/FREE directly, leak_live.c)."""
    if os.uname().machine != "x86_64":
        raise Skip("the register scenario is x86-64 assembly")
    _, out, _ = env.run([env.prog("leak_classes")], env={"TRACKER_SAMPLE_BYTES": "524288"})
    every = leaks_json(env, ["--kinds", "all", "-n", "0", out])
    eq(by_function(every), EXPECT, "sampled: class, bytes and blocks per scenario")
    s = summary(every)
    eq_all([((s["definite"]["bytes"], s["definite"]["count"]), DEFINITE, "sampled: definite"),
            ((s["indirect"]["bytes"], s["indirect"]["count"]), INDIRECT, "sampled: indirect"),
            (s["unclassified"]["count"], 0, "sampled: blocks not classified")])


def test_scan_off_keeps_old_behaviour(env):
    _, out, _ = env.run([env.prog("leak_classes")], env={"TRACKER_LEAK_SCAN": "0"})
    every = leaks_json(env, ["-n", "0", out])
    check(all("class" not in e and "leak_summary" not in e for e in every),
          "no classes without the scan: %r" % every[:3])
    text = tracker(env, ["leaks", "--no-progress", out]).stdout.decode()
    check("    leaked:" in text and "leaks not classified (no leak scan" in text,
          "old summary without the scan, said so:\n" + text)
    eq(sum(e["bytes"] for e in every if e.get("stack") and e["stack"][0]["function"] in EXPECT),
       sum(v[1] for v in EXPECT.values()), "every scenario block listed")


def gate_passes(env, argv, label):
    _, out, _ = env.run(argv)
    cp = tracker(env, ["leaks", "--no-progress", "--fail-on-leak", out], None)
    eq(cp.returncode, 0, "%s: --fail-on-leak (stderr %s)\n%s"
       % (label, cp.stderr.decode(errors="replace").strip(), cp.stdout.decode()[-3000:]))


def test_ordinary_programs_pass_the_gate(env):
    ran = 0
    for argv in (["python3", "-c", "import json"], ["/usr/bin/python3", "-c", "import json"],
                 ["git", "--version"], ["ls", "-la", "/"]):
        path = shutil.which(argv[0])
        if path:
            gate_passes(env, [path] + argv[1:], " ".join(argv))
            ran += 1
    cxx = os.path.join(env.progdir, "leak_cxx_static")
    if os.access(cxx, os.X_OK):
        gate_passes(env, [cxx], "C++ static strings and std::cout")
        ran += 1
    check(ran >= 3, "too few ordinary programs found (%d)" % ran)


if __name__ == "__main__":
    sys.exit(main(globals()))
