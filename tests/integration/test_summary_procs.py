#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_summary_procs.py - `tracker summary --all` over several captures of
one run (issue 10 §5): one row per process (pid, command, peak heap, peak
RSS, leaked) in text and JSON, each peak that process's own instant, never
added into one figure (§4: every "at the peak" figure is one instant); GPU
peaks per device, never added across devices as one instant.

The forker run (progs/forker.c): the parent leaks PN x PS before forking,
two forked children inherit those blocks and leak CN x CS more, the exec'd
child's new image (leaker) leaks EN x ES."""

import glob
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import check, eq, eq_all, main  # noqa: E402

PN, PS, CN, CS, EN, ES = 3, 1000, 4, 2000, 5, 3000


def run_tree(env):
    _, out, v = env.run([env.prog("forker"), env.prog("leaker")] +
                        [str(x) for x in (PN, PS, CN, CS, EN, ES)])
    files = sorted(glob.glob(os.path.join(os.path.dirname(out), "*.bin")))
    eq(len(files), 5, "root, two forked children, the exec'd pid's two images: %s" % files)
    return out, v


def summary(env, argv):
    cp = env.run_raw([env.tracker, "summary", "--no-progress"] + argv)
    eq(cp.returncode, 0, "summary %s: %s" % (argv, cp.stderr.decode(errors="replace")))
    return cp.stdout.decode()


def test_processes_json(env):
    out, v = run_tree(env)
    s = json.loads(summary(env, ["--all", "--json", "-n", "0", out]))
    # Several processes peak at different instants: no added-up top-level peak.
    check("peak_heap_bytes" not in s, "a top-level peak adds %s processes' peaks" % 5)
    procs = s["processes"]
    parent = env.stats(out, allow_truncated=True)["pid"]
    c1, c2, ex = (int(v[k]) for k in ("child_exit", "child_uexit", "child_exec"))
    want = {  # pid -> [(command's program, peak heap, leaked bytes, leaked blocks)]
        parent: [("forker", PN * PS, PN * PS, PN)],
        c1: [("forker", PN * PS + CN * CS, PN * PS + CN * CS, PN + CN)],
        c2: [("forker", PN * PS + CN * CS, PN * PS + CN * CS, PN + CN)],
        ex: [("forker", PN * PS, PN * PS, PN), ("leaker", EN * ES, EN * ES, EN)],
    }
    got = {}
    for p in procs:
        got.setdefault(p["pid"], []).append(
            (os.path.basename(p["command"].split()[0]), p["peak_heap_bytes"], p["leaked_bytes"],
             p["leaked_allocations"]))
        # Each row is exactly that capture's own figures (RSS where sampled).
        st = env.stats(p["capture"], allow_truncated=True)
        eq_all([(p.get("peak_rss_bytes", 0), st["rss_peak_bytes"], "pid %d RSS" % p["pid"]),
                (p["peak_heap_bytes"], st["peak_heap_bytes"], "pid %d peak = stats" % p["pid"]),
                (p["leaked_bytes"], st["leaked_bytes"], "pid %d leaked = stats" % p["pid"])])
    eq({k: sorted(x) for k, x in got.items()}, {k: sorted(x) for k, x in want.items()},
       "one row per process image")
    # Largest peak first; -n bounds the rows and says how many are left out.
    eq([p["peak_heap_bytes"] for p in procs],
       sorted((p["peak_heap_bytes"] for p in procs), reverse=True), "rows by peak")
    s2 = json.loads(summary(env, ["--all", "--json", "-n", "2", out]))
    eq_all([(len(s2["processes"]), 2, "-n 2 rows"), (s2["processes_omitted"], 3, "omitted")])
    # One capture keeps its single peak.
    one = json.loads(summary(env, ["--json", procs[0]["capture"]]))
    eq(one["peak_heap_bytes"], procs[0]["peak_heap_bytes"], "one capture's peak")


def test_processes_text(env):
    out, v = run_tree(env)
    t = summary(env, ["--all", out])
    check("processes (each peak is that process's own, at its own instant; they are not added up)"
          in t, "the table says its peaks are per process:\n" + t)
    rows = re.findall(r"^ +(\d+) +(\S+ \S+) +(\S+(?: \S+)?) +(\S+ \S+) +(\d+)  (\S+)", t, re.M)
    eq(sorted((int(r[0]), os.path.basename(r[5]), r[1], r[3], int(r[4])) for r in rows),
       sorted([(env.stats(out, allow_truncated=True)["pid"], "forker", "2.9 KiB", "2.9 KiB", PN),
               (int(v["child_exit"]), "forker", "10.7 KiB", "10.7 KiB", PN + CN),
               (int(v["child_uexit"]), "forker", "10.7 KiB", "10.7 KiB", PN + CN),
               (int(v["child_exec"]), "forker", "2.9 KiB", "2.9 KiB", PN),
               (int(v["child_exec"]), "leaker", "14.6 KiB", "14.6 KiB", EN)]),
       "text rows: pid, command, peak heap, leaked, blocks\n" + t)
    check("bytes live at each process's own peak made here" in t,
          "the location table says whose peak:\n" + t)
    tr = env.run_raw([env.tracker, "tree", "--all", "--no-progress", out]).stdout.decode()
    check(re.search(r"^live at each process's own peak: ", tr, re.M),
          "tree --all's title is not one peak:\n" + tr)
    # One capture: no table, the one peak.
    one = summary(env, [out])
    check("processes (" not in one and "bytes live at the peak made here" in one, one)


def test_gpu_devices_not_added(env):
    """gpu_driver device: 1 MiB on device 0; 2 MiB and 4 MiB on device 1.
    Each device's peak is its own; figures over both say so."""
    gpu = os.path.join(os.path.dirname(env.progdir.rstrip("/")), "gpu")
    prog = os.path.join(gpu, "gpu_driver")
    if not os.path.exists(prog):
        print("skip: no %s" % prog)
        return
    _, out, _ = env.run([prog, "device"], env={"LD_LIBRARY_PATH": os.path.join(gpu, "fake",
                                                                                "cuda")})
    s = json.loads(summary(env, ["--gpu", "--json", out]))
    eq({k: d["peak_bytes"] for k, d in s["gpu"].items()}, {"0": 1 << 20, "1": 6 << 20},
       "per-device peaks")
    eq({k: d["peak_bytes"] for k, d in s["processes"][0]["gpu"].items()},
       {"0": 1 << 20, "1": 6 << 20}, "the process's per-device peaks")
    t = summary(env, ["--gpu", out])
    check("bytes live at each device's own peak made here" in t, t)
    tr = env.run_raw([env.tracker, "tree", "--gpu", out]).stdout.decode()
    check(re.search(r"^live at each device's own peak: 7\.0 MiB", tr, re.M), tr)
    tr = env.run_raw([env.tracker, "tree", "--device", "1", out]).stdout.decode()
    check(re.search(r"^live at the peak: 6\.0 MiB", tr, re.M), tr)


if __name__ == "__main__":
    sys.exit(main(globals()))
