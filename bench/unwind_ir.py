#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""unwind_ir.py - instructions per event of a full capture with the own
unwinder (TRACKER_UNWIND=1, the default) and with libunwind only
(TRACKER_UNWIND=0), counted by callgrind, which VM noise does not move.

Runs allocbench (--threads 1 --mode ring --seed 1) at two pair counts under
valgrind --tool=callgrind, plain and under libtracker.so, and prints the
difference of the totals over the difference of events (2 per pair), so
that start-up and exit costs cancel out. Needs a bench build:
    meson setup build-bench -Dbench=true -Dtests=false && ninja -C build-bench
    python3 bench/unwind_ir.py [--build build-bench] [--pairs 20000 60000]
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile


def collected(build, pairs, env_extra, tmp):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACKER_")}
    env.pop("LD_PRELOAD", None)
    env.update(env_extra)
    out = os.path.join(tmp, "cg.out")
    argv = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out,
            os.path.join(build, "bench", "allocbench"), "--pairs", str(pairs),
            "--threads", "1", "--mode", "ring", "--seed", "1"]
    cp = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                        check=True)
    m = re.search(rb"Collected : (\d+)", cp.stderr)
    if not m:
        sys.exit("no callgrind total in: %s" % cp.stderr[-500:].decode(errors="replace"))
    return int(m.group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build-bench")
    ap.add_argument("--pairs", type=int, nargs=2, default=[20000, 60000])
    a = ap.parse_args()
    lib = os.path.abspath(os.path.join(a.build, "libtracker.so"))
    with tempfile.TemporaryDirectory() as tmp:
        cap = {"LD_PRELOAD": lib, "TRACKER_OUTPUT": os.path.join(tmp, "x.bin"),
               "TRACKER_FORCE": "1"}
        runs = [("plain", {}), ("libunwind (TRACKER_UNWIND=0)", dict(cap, TRACKER_UNWIND="0")),
                ("own unwinder (default)", dict(cap, TRACKER_UNWIND="1"))]
        events = 2 * (a.pairs[1] - a.pairs[0])
        print("%-30s %12s" % ("allocbench, 1 thread", "Ir/event"))
        for name, env in runs:
            lo = collected(a.build, a.pairs[0], env, tmp)
            hi = collected(a.build, a.pairs[1], env, tmp)
            print("%-30s %12.0f" % (name, (hi - lo) / events))


if __name__ == "__main__":
    main()
