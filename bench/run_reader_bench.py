#!/usr/bin/env python3
"""Reader-side benchmark: how fast the offline tools read a large capture.

Records one allocbench workload (ring, 1 thread; 2 events per pair) twice
with the real tools: under `tracker run` and under `heaptrack`, at --pairs
(default 25 M pairs = 50 M events) and, for tracker, again at a fifth of that.
Then, per repetition (medians of --reps are reported), it times:
  - reader_throughput   the reader library alone draining every event
                        (bench/reader_throughput.c): the ceiling on one core;
  - tracker stats/summary/leaks --json   on the large capture; summary and
                        leaks only if this build implements them (probed on
                        the small capture: a non-zero exit skips them);
  - heaptrack_print -p -a -l   on heaptrack's file of the same workload
                        (peaks, top allocators, leaks; temporaries off);
  - every tracker command on the small capture too, to show whether peak RSS
                        depends on the file size (it should not: the ring
                        workload's live set is the same 1024 blocks).
Wall time is measured here; CPU time (user+sys) and peak RSS come from
GNU time (%U %S %M). events/s divides each tool's own event count by wall
time; events/CPU-s by CPU time, which on a shared machine is the steadier
"one core" figure. tracker's count is `stats --json`'s "events" (every
allocation, free and realloc half); heaptrack_print only reports "calls to
allocation functions" (no frees), so its rate is also given over the
workload's event count (allocbench's own allocations + frees) in the last
column, which is what both tools had to read.

Captures go to a temporary directory (under --tmp, default $TMPDIR) that is
removed at the end unless --keep. Needs about 8 B/event of disk for tracker
and 3 B/event for heaptrack.

Usage: bench/run_reader_bench.py [--build build-dev] [--pairs N] [--reps N]
                                 [--quick] [--keep] [--tmp DIR]
                                 [--out bench/results_reader.md]
Python 3 standard library only.
"""
import argparse
import datetime
import glob
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIME = "/usr/bin/time"
WORKLOAD = ["--mode", "ring", "--threads", "1", "--seed", "1"]
LOOP_RE = re.compile(r"loop_s=([0-9.]+) events=([0-9]+)")
HT_CALLS_RE = re.compile(r"calls to allocation functions: ([0-9]+)")
THR_RE = re.compile(r"events=([0-9]+) wall_s=([0-9.]+) cpu_s=([0-9.]+)")


def die(msg):
    print(f"run_reader_bench: {msg}", file=sys.stderr)
    sys.exit(1)


def find_build(arg):
    for cand in (arg, os.path.join(REPO, arg)):
        if os.path.isdir(cand):
            return os.path.abspath(cand)
    die(f"build directory '{arg}' not found (meson setup {arg} && ninja -C {arg})")


def timed(cmd, tmpdir, timeout=3600, stdout_path=None):
    """Runs cmd under GNU time; returns dict(rc, wall, cpu, rss_kb, out).
    Starting through `time` (a small process) keeps this Python process's
    RSS out of the child's peak, which survives fork+exec otherwise."""
    tf = os.path.join(tmpdir, "time.out")
    out_path = stdout_path or os.path.join(tmpdir, "cmd.out")
    with open(out_path, "wb") as out, open(os.path.join(tmpdir, "cmd.err"), "wb") as err:
        t0 = time.monotonic()
        p = subprocess.run([TIME, "-o", tf, "-f", "%U %S %M"] + cmd, stdout=out, stderr=err,
                           timeout=timeout)
        wall = time.monotonic() - t0
    with open(tf) as f:
        # GNU time prints "Command exited with non-zero status N" first then.
        user, sys_, rss = f.read().strip().splitlines()[-1].split()
    with open(out_path, "rb") as f:
        text = f.read().decode(errors="replace") if stdout_path is None else ""
    with open(os.path.join(tmpdir, "cmd.err"), "rb") as f:
        errtext = f.read().decode(errors="replace")
    return dict(rc=p.returncode, wall=wall, cpu=float(user) + float(sys_), rss_kb=int(rss),
                out=text, err=errtext)


def record_tracker(build, tmp, pairs, name):
    out = os.path.join(tmp, name)
    allocbench = os.path.join(build, "bench", "allocbench")
    r = timed([os.path.join(build, "tracker"), "run", "-q", "-f", "-o", out, "--", allocbench,
               "--pairs", str(pairs)] + WORKLOAD, tmp)
    if r["rc"] != 0:
        die(f"tracker run failed: {r['err'][-500:]}")
    m = LOOP_RE.search(r["out"] + r["err"])
    return out, int(m.group(2)) if m else 0, r["wall"]


def record_heaptrack(build, tmp, pairs):
    base = os.path.join(tmp, "heaptrack.allocbench")
    allocbench = os.path.join(build, "bench", "allocbench")
    r = timed(["heaptrack", "-o", base, allocbench, "--pairs", str(pairs)] + WORKLOAD, tmp)
    files = glob.glob(base + "*")
    if r["rc"] != 0 or not files:
        die(f"heaptrack failed: {r['err'][-500:]}")
    m = LOOP_RE.search(r["out"] + r["err"])
    return files[0], int(m.group(2)) if m else 0, r["wall"]


def warm(path):
    """Reads the file once so that every tool starts from the page cache."""
    with open(path, "rb") as f:
        while f.read(8 << 20):
            pass


def tracker_cmd(build, sub, path):
    return [os.path.join(build, "tracker"), sub, "--json", path]


def heaptrack_cmd(path):
    return ["heaptrack_print", "-p", "1", "-a", "1", "-T", "0", "-l", "1", "-f", path]


def med(runs, key):
    vals = [r[key] for r in runs if r.get(key) is not None]
    return statistics.median(vals) if vals else None


def fmt_rate(v):
    return "–" if not v else f"{v / 1e6:.1f} M"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build-dev")
    ap.add_argument("--pairs", type=int, default=25_000_000, help="large capture (2 events per pair)")
    ap.add_argument("--small-div", type=int, default=5, help="small capture = pairs / this")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="1 M pairs, 1 rep (smoke test)")
    ap.add_argument("--keep", action="store_true", help="keep the captures")
    ap.add_argument("--no-heaptrack", action="store_true")
    ap.add_argument("--tmp", default=None, help="where captures go (default $TMPDIR)")
    ap.add_argument("--out", default=os.path.join(REPO, "bench", "results_reader.md"))
    args = ap.parse_args()
    if args.quick:
        args.pairs, args.reps = 1_000_000, 1
    build = find_build(args.build)
    for exe in ("tracker", "bench/allocbench", "bench/reader_throughput"):
        if not os.access(os.path.join(build, exe), os.X_OK):
            die(f"{build}/{exe} not built (ninja -C {build})")
    if not os.access(TIME, os.X_OK):
        die(f"{TIME} (GNU time) is needed for peak RSS")
    have_ht = not args.no_heaptrack and shutil.which("heaptrack") and shutil.which("heaptrack_print")
    small_pairs = max(1, args.pairs // args.small_div)
    need = args.pairs * 2 * (8 + (3 if have_ht else 0)) + small_pairs * 2 * 8
    tmp = tempfile.mkdtemp(prefix="trk-reader-bench.", dir=args.tmp)
    free = shutil.disk_usage(tmp).free
    if free < need * 1.2:
        shutil.rmtree(tmp)
        die(f"{tmp}: {free >> 20} MiB free, about {need >> 20} MiB needed")
    try:
        run(args, build, tmp, have_ht, small_pairs)
    finally:
        if args.keep:
            print(f"captures kept in {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def run(args, build, tmp, have_ht, small_pairs):
    print(f"recording {args.pairs} pairs under tracker ...", file=sys.stderr)
    big, wl_events, rec_s = record_tracker(build, tmp, args.pairs, "big.bin")
    small, wl_small, _ = record_tracker(build, tmp, small_pairs, "small.bin")
    ht_file = None
    if have_ht:
        print("recording the same workload under heaptrack ...", file=sys.stderr)
        ht_file, _, ht_rec_s = record_heaptrack(build, tmp, args.pairs)

    # Which tracker commands exist in this build (summary/leaks may not yet).
    cmds, skipped = ["stats"], []
    for sub in ("summary", "leaks"):
        r = timed(tracker_cmd(build, sub, small), tmp)
        if r["rc"] == 0:
            cmds.append(sub)
        else:
            skipped.append(f"`tracker {sub}`: exit {r['rc']} ({r['err'].strip()[:80]})")

    files = [big, small] + ([ht_file] if ht_file else [])
    for f in files:
        warm(f)
    cap_events = {}
    for name, path in (("big", big), ("small", small)):
        r = timed(tracker_cmd(build, "stats", path), tmp)
        cap_events[name] = json.loads(r["out"])["events"]

    runs = {}  # label -> list of dicts
    def add(label, d):
        runs.setdefault(label, []).append(d)

    thr = os.path.join(build, "bench", "reader_throughput")
    for rep in range(args.reps):
        print(f"repetition {rep + 1}/{args.reps} ...", file=sys.stderr)
        for mode in ("batch", "single"):
            r = timed([thr] + (["--single"] if mode == "single" else []) + [big], tmp)
            m = THR_RE.search(r["out"])
            if r["rc"] != 0 or not m:
                die(f"reader_throughput failed: {r['err'][-300:]}")
            add(f"reader:{mode}", dict(events=int(m.group(1)), wall=float(m.group(2)),
                                       cpu=float(m.group(3)), rss_kb=r["rss_kb"]))
        for sub in cmds:
            for size, path in (("big", big), ("small", small)):
                sink = os.path.join(tmp, "report.json")
                r = timed(tracker_cmd(build, sub, path), tmp, stdout_path=sink)
                if r["rc"] != 0:
                    die(f"tracker {sub} failed: {r['err'][-300:]}")
                add(f"{sub}:{size}", dict(events=cap_events[size], wall=r["wall"], cpu=r["cpu"],
                                          rss_kb=r["rss_kb"]))
        if ht_file:
            r = timed(heaptrack_cmd(ht_file), tmp)
            m = HT_CALLS_RE.search(r["out"])
            if r["rc"] != 0 or not m:
                die(f"heaptrack_print failed: {r['err'][-300:]}")
            add("heaptrack_print:big", dict(events=int(m.group(1)), wall=r["wall"], cpu=r["cpu"],
                                            rss_kb=r["rss_kb"]))

    report(args, build, big, small, ht_file, wl_events, wl_small, cap_events, rec_s,
           ht_rec_s if ht_file else None, cmds, skipped, runs)


def report(args, build, big, small, ht_file, wl_events, wl_small, cap_events, rec_s, ht_rec_s,
           cmds, skipped, runs):
    def row(label, tool, what):
        rs = runs[label]
        ev, wall, cpu, rss = med(rs, "events"), med(rs, "wall"), med(rs, "cpu"), med(rs, "rss_kb")
        wl = wl_events if label.endswith("big") or label.startswith("reader") else wl_small
        return (f"| {tool} | {what} | {ev / 1e6:.1f} M | {wall:.2f} | {fmt_rate(ev / wall)} | "
                f"{cpu:.2f} | {fmt_rate(ev / cpu if cpu else 0)} | {rss / 1024:.1f} | "
                f"{fmt_rate(wl / wall)} |")

    lines = []
    commit = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    lines.append(f"# Reader benchmark ({datetime.date.today()}, repository at {commit or '?'}, "
                 f"build `{build}`)\n")
    lines.append(f"Workload: `allocbench --pairs {args.pairs} {' '.join(WORKLOAD)}` "
                 f"({wl_events / 1e6:.1f} M allocations+frees). tracker capture "
                 f"{os.path.getsize(big) / 2**20:.0f} MiB "
                 f"({os.path.getsize(big) / max(cap_events['big'], 1):.2f} B/event, recorded in "
                 f"{rec_s:.1f} s)"
                 + (f"; heaptrack file {os.path.getsize(ht_file) / 2**20:.0f} MiB "
                    f"(recorded in {ht_rec_s:.1f} s)." if ht_file else ".")
                 + f" Medians of {args.reps}; host {platform.node()}, "
                 f"{os.cpu_count()} CPUs (shared: prefer the CPU columns).\n")
    lines.append("| tool | command | events | wall s | events/s | CPU s | events/CPU-s | "
                 "peak RSS MiB | workload events/s |")
    lines.append("|---|---|---|---|---|---|---|---|---|")
    lines.append(row("reader:batch", "reader library", "`reader_throughput` (next_batch 256)"))
    lines.append(row("reader:single", "reader library", "`reader_throughput --single` (next)"))
    for sub in cmds:
        lines.append(row(f"{sub}:big", "tracker", f"`tracker {sub} --json`"))
    if ht_file:
        lines.append(row("heaptrack_print:big", "heaptrack 1.4",
                         "`heaptrack_print -p -a -l` (events = allocation calls)"))
    lines.append("")
    lines.append(f"Memory against file size: the same workload at {wl_small / 1e6:.1f} M and "
                 f"{wl_events / 1e6:.1f} M events ({os.path.getsize(small) / 2**20:.0f} MiB vs "
                 f"{os.path.getsize(big) / 2**20:.0f} MiB).\n")
    lines.append(f"| command | peak RSS MiB, {cap_events['small'] / 1e6:.1f} M events | "
                 f"peak RSS MiB, {cap_events['big'] / 1e6:.1f} M events | ratio |")
    lines.append("|---|---|---|---|")
    for sub in cmds:
        a, b = med(runs[f"{sub}:small"], "rss_kb"), med(runs[f"{sub}:big"], "rss_kb")
        lines.append(f"| `tracker {sub} --json` | {a / 1024:.1f} | {b / 1024:.1f} | {b / a:.2f} |")
    for note in skipped:
        lines.append(f"\nSkipped: {note}.")
    lines.append("\n<details><summary>raw runs</summary>\n")
    for label, rs in runs.items():
        for r in rs:
            lines.append(f"- {label}: events={r['events']} wall={r['wall']:.3f} "
                         f"cpu={r['cpu']:.3f} rss_kb={r['rss_kb']}")
    lines.append("\n</details>")
    text = "\n".join(lines) + "\n"
    print(text)
    with open(args.out, "w") as f:
        f.write(text)
    print(f"written to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
