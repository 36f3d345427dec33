#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""record_ir.py - instructions per event of a capture, by part of the path
(hooks, record encoding and ring, unwinder and stack interning, libc's
malloc, the program), counted by callgrind, and the writer's codec work
per raw byte (bench/codec_ir.c).

allocbench (--threads 1 --mode ring --seed 1) runs under
valgrind --tool=callgrind at two pair counts with libtracker.so preloaded;
each part's Ir difference over the difference in events (2 per pair) is
its cost per event, start-up and exit cancelled. The default counts,
60000 and 100000 pairs, are both past the TSC fit's first 2 ms, which
under valgrind take thousands of events (until then every event reads
clock_gettime on the slow path), so the difference is the steady state.
The exit leak scan is off (TRACKER_LEAK_SCAN=0; bench/run_leak_bench.py
counts it).

The writer thread's share is left out of the table: whether a ring piece
reached LZ_MIN_LEN and which codec won depends on when valgrind schedules
the writer, which moves a run's total by +-50 instructions per event.
codec_ir counts it instead on a fixed piece of allocbench-like records;
multiply by the raw bytes per event (~5.5 on allocbench) for a per-event
figure. Needs a bench build:
    meson setup build-bench -Dbench=true -Dtests=false && ninja -C build-bench
    python3 bench/record_ir.py [--build build-bench] [--sample-bytes N]
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

PARTS = [
    ("writer (left out)", r"huf\.c|LZ4|memmove|crc32c|smmintrin|writer\.c|lz_link\.c"),
    ("unwinder + intern", r"unwind|stacks\.c|hash\.h|intern\.c"),
    # The ALLOC/FREE fast path is inlined into the hooks (capture/ev_inline.h):
    # its lines, and the encoders' inlined with it, count here, not as hooks.
    ("record + ring", r":trk_ev_|clock\.c|:alloc_slow|:free_slow|:fast_wake|:fast_refresh"
     r"|:trk_heap_q_span|events\.[ch]:|(ev_inline|heap_ts|record|varint)\.h:(malloc|calloc"
     r"|realloc|free|trk_)"),
    ("hooks", r"hooks_malloc|hook\.h|thread\.h|guard\.h|real\.h|sample\.[ch]|errno"),
    ("libc malloc", r"libc\.so.*(malloc|arena)|malloc\.c"),
]


def run(build, pairs, env_extra, tmp):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACKER_")}
    env.pop("LD_PRELOAD", None)
    env.update(env_extra)
    out = os.path.join(tmp, "cg.%d.out" % pairs)
    argv = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out,
            os.path.join(build, "bench", "allocbench"), "--pairs", str(pairs),
            "--threads", "1", "--mode", "ring", "--seed", "1"]
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=True)
    ann = subprocess.run(["callgrind_annotate", "--auto=no", "--threshold=100", out],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=True)
    cost = {}
    for line in ann.stdout.decode(errors="replace").splitlines():
        m = re.match(r"\s*([\d,]+)\s+\(.*?\)\s+(.*)", line)
        if m:
            cost[m.group(2).strip()] = int(m.group(1).replace(",", ""))
    return cost


def part_of(name):
    if "PROGRAM TOTALS" in name:
        return "total"
    for part, rx in PARTS:
        if re.search(rx, name):
            return part
    return "program + other"


def codec_ir(build):
    def collected(reps):
        cp = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                             os.path.join(build, "bench", "codec_ir"), str(reps)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True)
        piece = int(re.search(rb"piece=(\d+)", cp.stdout).group(1))
        return int(re.search(rb"Collected : (\d+)", cp.stderr).group(1)), piece
    lo, piece = collected(1)
    hi, _ = collected(17)
    return (hi - lo) / 16 / piece


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build-bench")
    ap.add_argument("--pairs", type=int, nargs=2, default=[60000, 100000])
    ap.add_argument("--sample-bytes", type=int, default=0)
    a = ap.parse_args()
    lib = os.path.abspath(os.path.join(a.build, "libtracker.so"))
    events = 2 * (a.pairs[1] - a.pairs[0])
    with tempfile.TemporaryDirectory() as tmp:
        env = {"LD_PRELOAD": lib, "TRACKER_OUTPUT": os.path.join(tmp, "x.bin"),
               "TRACKER_FORCE": "1", "TRACKER_QUIET": "1", "TRACKER_LEAK_SCAN": "0"}
        if a.sample_bytes:
            env["TRACKER_SAMPLE_BYTES"] = str(a.sample_bytes)
        lo = run(a.build, a.pairs[0], env, tmp)
        hi = run(a.build, a.pairs[1], env, tmp)
    parts = {}
    for name in set(lo) | set(hi):
        p = part_of(name)
        parts[p] = parts.get(p, 0) + hi.get(name, 0) - lo.get(name, 0)
    print("allocbench ring 1 thread, %d vs %d pairs%s: Ir per event"
          % (a.pairs[0], a.pairs[1],
             ", --sample-bytes %d" % a.sample_bytes if a.sample_bytes else ""))
    for p in [x for x, _ in PARTS[1:]] + ["program + other"]:
        print("  %-22s %8.1f" % (p, parts.get(p, 0) / events))
    print("  %-22s %8.1f  (noisy, see the header)" % (PARTS[0][0], parts.get(PARTS[0][0], 0) / events))
    print("  %-22s %8.1f" % ("total", parts.get("total", 0) / events))
    print("writer codecs (codec_ir): %.1f Ir per raw byte" % codec_ir(a.build))


if __name__ == "__main__":
    sys.exit(main())
