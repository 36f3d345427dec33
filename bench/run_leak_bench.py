#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""run_leak_bench.py - what the exit-time leak scan (docs/FORMAT.md §4a)
costs, next to valgrind --leak-check=full on the same programs.

1. Per event: callgrind instruction counts of allocbench (ring, 1 thread,
   seed 1) at --pairs 20000 and 60000 under the tracker with
   TRACKER_LEAK_SCAN=0 and =1; (Ir(60000) - Ir(20000)) / 80000 events is the
   cost per event, and the difference between the two settings is what the
   scan adds per event (the hot path is the same code either way). Then
   the scan's two parts alone (callgrind --toggle-collect, median of 3
   runs each: the writer's codec per chunk moves single runs): the exit
   scan (trk_leakscan_run) and the writer thread's upkeep of the live set
   it collects (trk_ltrack_piece; before issue 12's change the scan read
   the whole capture back instead, ~200-280 Ir/event).
2. At exit: bench/leak_exit leaves 1 MB, 100 MB, 1 GB live (1 KiB blocks,
   all reachable); median wall seconds of the whole run, plain, tracker
   without and with the scan, valgrind --leak-check=no and =full.

Usage: bench/run_leak_bench.py [--build build-bench] [--reps 3] [--sizes 1,100,1000]
Prints a markdown table; --out FILE also writes it there.
"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def callgrind_ir(argv, env, extra=()):
    with tempfile.TemporaryDirectory() as d:
        full = dict(os.environ, **env)
        cp = subprocess.run(["valgrind", "--tool=callgrind", *extra,
                             "--callgrind-out-file=" + os.path.join(d, "cg.out")] + argv,
                            env=full, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            timeout=1800, cwd=d)
        m = re.search(r"Collected : (\d+)", cp.stderr.decode(errors="replace"))
        if not m:
            sys.exit("callgrind printed no total:\n" + cp.stderr.decode(errors="replace")[-2000:])
        return int(m.group(1))


def per_event(build, preload):
    bench = os.path.join(build, "bench", "allocbench")
    rows = []
    for label, env in (("plain", {}),
                       ("tracker, no scan", {"LD_PRELOAD": preload, "TRACKER_LEAK_SCAN": "0"}),
                       ("tracker, scan", {"LD_PRELOAD": preload, "TRACKER_LEAK_SCAN": "1"})):
        ir = {}
        for pairs in (20000, 60000):
            e = dict(env)
            if "LD_PRELOAD" in e:
                e["TRACKER_OUTPUT"] = "cg.bin"
                e["TRACKER_FORCE"] = "1"
            ir[pairs] = callgrind_ir([bench, "--pairs", str(pairs), "--threads", "1", "--mode",
                                      "ring", "--seed", "1"], e)
        rows.append((label, ir[20000], ir[60000], (ir[60000] - ir[20000]) / 80000.0))
    env = {"LD_PRELOAD": preload, "TRACKER_LEAK_SCAN": "1", "TRACKER_OUTPUT": "cg.bin",
           "TRACKER_FORCE": "1"}
    for label, fn in (("exit scan alone", "trk_leakscan_run"),
                      ("writer's live set alone", "trk_ltrack_piece")):
        ir = {}
        for pairs in (20000, 60000):
            ir[pairs] = statistics.median(
                callgrind_ir([bench, "--pairs", str(pairs), "--threads", "1", "--mode", "ring",
                              "--seed", "1"], env, ["--toggle-collect=" + fn])
                for _ in range(3))
        rows.append((label, ir[20000], ir[60000], (ir[60000] - ir[20000]) / 80000.0))
    return rows


def wall(argv, env):
    t = time.monotonic()
    subprocess.run(argv, env=dict(os.environ, **env), stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=True, timeout=3600)
    return time.monotonic() - t


def at_exit(build, tracker, sizes, reps):
    prog = os.path.join(build, "bench", "leak_exit")
    vg = shutil.which("valgrind")
    out = {}
    with tempfile.TemporaryDirectory() as d:
        cap = os.path.join(d, "x.bin")
        configs = [
            ("plain", lambda mb: [prog, str(mb)], {}),
            ("tracker, no scan", lambda mb: [tracker, "run", "-q", "-f", "-o", cap, "--", prog,
                                             str(mb)], {"TRACKER_LEAK_SCAN": "0"}),
            ("tracker, scan", lambda mb: [tracker, "run", "-q", "-f", "-o", cap, "--", prog,
                                          str(mb)], {"TRACKER_LEAK_SCAN": "1"}),
        ]
        if vg:
            configs += [
                ("valgrind --leak-check=no",
                 lambda mb: [vg, "-q", "--leak-check=no", prog, str(mb)], {}),
                ("valgrind --leak-check=full",
                 lambda mb: [vg, "-q", "--leak-check=full", "--show-leak-kinds=all",
                             "--run-libc-freeres=no", prog, str(mb)], {}),
            ]
        for mb in sizes:
            runs = {c[0]: [] for c in configs}
            for _ in range(reps):  # interleaved: load drifts hit every config alike
                for label, argv, env in configs:
                    runs[label].append(wall(argv(mb), env))
            out[mb] = {k: statistics.median(v) for k, v in runs.items()}
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build-bench"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--sizes", default="1,100,1000")
    ap.add_argument("--skip-callgrind", action="store_true")
    ap.add_argument("--out")
    a = ap.parse_args()
    a.build = os.path.abspath(a.build)
    tracker = os.path.join(a.build, "tracker")
    preload = os.path.join(a.build, "libtracker.so")
    lines = ["# Leak scan at exit: cost", ""]
    if not a.skip_callgrind:
        lines += ["## Per event (callgrind Ir, allocbench ring, 1 thread, seed 1)", "",
                  "| config | Ir 20000 pairs | Ir 60000 pairs | Ir/event |", "|---|---|---|---|"]
        for label, i1, i2, pe in per_event(a.build, preload):
            lines.append("| %s | %d | %d | %.1f |" % (label, i1, i2, pe))
        lines.append("")
    sizes = [int(x) for x in a.sizes.split(",")]
    res = at_exit(a.build, tracker, sizes, a.reps)
    labels = list(next(iter(res.values())).keys())
    lines += ["## At exit: live heap of 1 KiB blocks, all reachable (median wall s, %d reps)"
              % a.reps, "", "| live MB | " + " | ".join(labels) + " | scan s |",
              "|---|" + "---|" * (len(labels) + 1)]
    for mb, r in res.items():
        lines.append("| %d | " % mb + " | ".join("%.2f" % r[k] for k in labels) +
                     " | %.2f |" % (r["tracker, scan"] - r["tracker, no scan"]))
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
