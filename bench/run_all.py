#!/usr/bin/env python3
"""Every capture-cost figure of issue 12 in one run and one table.

Sections (each row: wall, CPU of the whole process tree, max RSS, capture,
bytes/event, instructions/event; ratios against plain of the same workload):
  allocbench   ring 1 and 2 threads: plain, `tracker run`, `tracker run
               --sample-bytes 524288` (when `tracker run --help` lists it) and
               heaptrack (when installed); medians of --reps interleaved runs
               (the timing loop of bench/run_bench.py).
  callgrind    instructions per event on allocbench 1 thread: total Ir of the
               process tree (valgrind --trace-children) at --pairs 100000 minus
               at --pairs 60000, over the 80,000 events between; VM noise does
               not move it. Shown in the Ir/event column of the ring 1T rows.
  torch        `python3 -c "import torch"` and bench/workloads/torch_train.py
               (30 SGD steps on the CPU): plain, tracker (hybrid default),
               tracker --python-only (when the interpreter has torch); notes
               give the tracker's own memory (`stats` tracker_memory).
  python       bench/workloads/ plain, tracker modes and memray side by side
               (bench/run_python_bench.py, run as a child; memray columns when
               --memray-path or $MEMRAY_PATH points at an importable memray).
A closing list checks the figures against the issue's targets.

Usage: bench/run_all.py [--build build-bench] [--quick] [--reps N]
           [--sections allocbench,callgrind,torch,python] [--memray-path DIR]
           [--python /usr/bin/python3] [--out bench/results_all.md]
--quick: small sizes and few runs (a few minutes; ratios are rough).
Python 3 standard library only.
"""
import argparse
import datetime
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import run_bench  # noqa: E402  (allocbench timing: run_one, env_info)
import run_python_bench  # noqa: E402  (any command: run_one with GNU time)
from run_python_bench import fmt, med, ratio  # noqa: E402  (the tables' shared helpers)

SECTIONS = ("allocbench", "callgrind", "torch", "python")
SAMPLE = ["--sample-bytes", "524288"]


def log(msg):
    print(msg, flush=True)


def tracker_configs(tracker, heaptrack):
    """[(name, fn(cmd, dir) -> (argv, capture glob))] for allocbench."""
    help_text = run_python_bench.tracker_run_help(tracker)
    cfgs = [("plain", lambda c, d: (c, None)),
            ("tracker", lambda c, d: ([tracker, "run", "-q", "-f", "-o", os.path.join(d, "cap.trk"),
                                       "--"] + c, os.path.join(d, "cap*.trk")))]
    notes = []
    if run_python_bench.has_flag(help_text, SAMPLE[0]):
        cfgs.append(("tracker " + " ".join(SAMPLE),
                     lambda c, d: ([tracker, "run", "-q", "-f", "-o", os.path.join(d, "cap.trk")]
                                   + SAMPLE + ["--"] + c, os.path.join(d, "cap*.trk"))))
    else:
        notes.append(f"`tracker {' '.join(SAMPLE)}` skipped: `tracker run --help` has no {SAMPLE[0]}")
    if heaptrack:
        cfgs.append(("heaptrack", lambda c, d: ([heaptrack, "-o", os.path.join(d, "ht")] + c,
                                                os.path.join(d, "ht.*"))))
    else:
        notes.append("heaptrack skipped: not installed")
    return cfgs, notes


def section_allocbench(args, bench, cfgs, tmp, rows):
    workloads = [("ring 1T", ["--mode", "ring", "--threads", "1"]),
                 ("ring 2T", ["--mode", "ring", "--threads", "2"])]
    res = {(w, c): [] for w, _ in workloads for c, _ in cfgs}
    for rep in range(args.reps):
        for wi, (wname, wargs) in enumerate(workloads):
            cmd = [bench, "--pairs", str(args.pairs), "--seed", "1"] + wargs
            k = (rep + wi) % len(cfgs)
            for cname, make in cfgs[k:] + cfgs[:k]:
                d = os.path.join(tmp, "ab")
                shutil.rmtree(d, ignore_errors=True)
                os.makedirs(d)
                argv, cap = make(cmd, d)
                try:
                    r = run_bench.run_one(argv, d, args.timeout)
                except run_bench.RunError as e:
                    log(f"[allocbench {rep + 1}/{args.reps}] {wname} {cname}: FAILED {e}")
                    continue
                files = glob.glob(cap) if cap else []
                r["size"] = sum(os.path.getsize(f) for f in files) if files else None
                res[(wname, cname)].append(r)
                log(f"[allocbench {rep + 1}/{args.reps}] {wname:8s} {cname:30s} wall {r['wall']:.3f} "
                    f"cpu {r['cpu']:.3f}" + (f" capture {r['size'] / 1e6:.1f} MB" if r["size"] else ""))
    for wname, _ in workloads:
        for cname, _ in cfgs:
            rs = res[(wname, cname)]
            size, events = med([r["size"] for r in rs]), med([r["events"] for r in rs])
            rows.append({"section": "allocbench", "workload": wname, "mode": cname, "n": len(rs),
                         "wall": med([r["wall"] for r in rs]), "cpu": med([r["cpu"] for r in rs]),
                         "rss_kb": med([r["tree_rss_kb"] for r in rs]), "size": size,
                         "bpe": ratio(size, events)})


def callgrind_total(argv, d, timeout):
    """Summed Ir of every process of argv's tree under callgrind: (all
    threads, each process's first thread). The rest is the tracker's own
    threads (writer, sampler), whose Ir per event depends on how often the
    writer wakes, i.e. on wall time, which valgrind stretches some 50-fold
    (and valgrind runs one thread at a time): the total moves by up to
    +-150 Ir/event between runs of one binary, the first thread's by up to
    +-50 (where its ring fills, it flushes for itself)."""
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    vg = ["valgrind", "--tool=callgrind", "--trace-children=yes", "--separate-threads=yes",
          "--callgrind-out-file=" + os.path.join(d, "cg.%p")]
    subprocess.run(vg + argv, cwd=d, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   timeout=timeout, check=True)
    total = first = 0
    for f in glob.glob(os.path.join(d, "cg.*")):
        with open(f, errors="replace") as fh:
            for line in fh:
                if line.startswith("totals:") or line.startswith("summary:"):
                    n = int(line.split()[1])
                    total += n
                    first += n if f.endswith("-01") else 0
                    break
    return total, first


def section_callgrind(args, bench, cfgs, tmp, rows):
    if not shutil.which("valgrind"):
        return ["callgrind skipped: valgrind not installed"]
    notes = []
    # Both past the first TSC fit (clock.c), which under valgrind comes some
    # 20,000 pairs in: before it every event reads clock_gettime on the slow
    # path, and a difference across that point measured neither.
    lo, hi = 60000, 100000
    for cname, make in cfgs:
        if cname == "heaptrack":
            continue  # its interpreter runs as a separate pipeline; not comparable
        ir = []
        for pairs in (lo, hi):
            d = os.path.join(tmp, "cg")
            cmd = [bench, "--pairs", str(pairs), "--seed", "1", "--mode", "ring", "--threads", "1"]
            argv, _ = make(cmd, d)
            try:
                ir.append(callgrind_total(argv, d, args.timeout))
            except (subprocess.SubprocessError, OSError) as e:
                log(f"[callgrind] {cname}: FAILED {e}")
                break
        if len(ir) == 2:
            per = (ir[1][0] - ir[0][0]) / (2 * (hi - lo))
            prog = (ir[1][1] - ir[0][1]) / (2 * (hi - lo))
            log(f"[callgrind] {cname:30s} {per:.0f} Ir/event, {prog:.0f} of them in the program's thread")
            notes.append(f"callgrind, {cname}: {per:.0f} Ir/event, {prog:.0f} in the program's thread "
                         f"and {per - prog:.0f} in the tracker's threads (writer, sampler)")
            for r in rows:
                if r["section"] == "allocbench" and r["workload"] == "ring 1T" and r["mode"] == cname:
                    r["ir"] = per
                    break
            else:
                rows.append({"section": "allocbench", "workload": "ring 1T", "mode": cname, "ir": per})
    return notes


TORCH_WORKLOADS = (("import torch", ["-c", "import torch"]),
                   ("torch_train 30 steps", [os.path.join(HERE, "workloads", "torch_train.py"), "30"]))
# Only where torch sees a CUDA device (section_torch asks once).
TORCH_CUDA_WORKLOADS = (("torch_cuda_train 100 steps",
                         [os.path.join(HERE, "workloads", "torch_cuda_train.py"), "100"]),)


def own_memory(tracker, cap):
    """(peak, at end) of the tracker's own memory in the traced process, MB
    (`tracker stats --json`, tracker_memory), or (None, None)."""
    try:
        cp = subprocess.run([tracker, "stats", "--json", cap], capture_output=True, timeout=300)
        m = json.loads(cp.stdout.decode()).get("tracker_memory") or {}
    except (subprocess.SubprocessError, OSError, ValueError):
        return None, None
    return (m.get("peak_bytes", 0) / 2**20 if "peak_bytes" in m else None,
            m.get("total_bytes", 0) / 2**20 if "total_bytes" in m else None)


def section_torch(args, python, tracker, tmp, rows):
    if subprocess.run([python, "-c", "import torch"], capture_output=True,
                      timeout=args.timeout).returncode:
        return [f"torch skipped: `{python} -c 'import torch'` fails"]
    modes = [("plain", None), ("tracker", []), ("tracker --python-only", ["--python-only"])]
    notes = []
    workloads = TORCH_WORKLOADS
    if subprocess.run([python, "-c", "import sys, torch; sys.exit(not torch.cuda.is_available())"],
                      capture_output=True, timeout=args.timeout).returncode == 0:
        workloads += TORCH_CUDA_WORKLOADS
    else:
        notes.append("torch_cuda_train skipped: torch sees no CUDA device")
    for wname, pyargs in workloads:
        res = {m: [] for m, _ in modes}
        for rep in range(args.torch_reps):
            k = rep % len(modes)
            for mname, flags in modes[k:] + modes[:k]:
                d = os.path.join(tmp, "torch")
                shutil.rmtree(d, ignore_errors=True)
                os.makedirs(d)
                cap = os.path.join(d, "cap.trk")
                argv = ([python] + pyargs if flags is None else
                        [tracker, "run", "-q", "-f", "-o", cap, "--python", python] + flags + pyargs)
                try:
                    r = run_python_bench.run_one(argv, dict(os.environ), d, args.timeout)
                except run_python_bench.RunError as e:
                    log(f"[{wname} {rep + 1}/{args.torch_reps}] {mname}: FAILED {e}")
                    continue
                files = glob.glob(os.path.join(d, "cap*.trk"))
                r["size"] = sum(os.path.getsize(f) for f in files) if files else None
                r["own_peak"], r["own_end"] = own_memory(tracker, cap) if files else (None, None)
                res[mname].append(r)
                log(f"[{wname} {rep + 1}/{args.torch_reps}] {mname:22s} wall {r['wall']:.3f} "
                    f"cpu {r['cpu']:.3f} rss {r['rss_kb'] / 1024:.0f} MB")
        for mname, _ in modes:
            rs = res[mname]
            rows.append({"section": "torch", "workload": wname, "mode": mname, "n": len(rs),
                         "wall": med([r["wall"] for r in rs]), "cpu": med([r["cpu"] for r in rs]),
                         "rss_kb": med([r["rss_kb"] for r in rs]), "size": med([r["size"] for r in rs])})
            peaks = [r["own_peak"] for r in rs if r.get("own_peak") is not None]
            if peaks:
                notes.append(f"{wname}, {mname}: tracker's own memory (`stats` tracker_memory, "
                             f"medians) {med(peaks):.1f} MB at its peak, "
                             f"{med([r['own_end'] for r in rs if r.get('own_end') is not None]):.1f} MB "
                             "at the end")
    return notes


def section_python(args, python, tracker, tmp, rows):
    js = os.path.join(tmp, "py.json")
    cmd = [sys.executable, os.path.join(HERE, "run_python_bench.py"), "--tracker", tracker,
           "--python", python, "--runs", str(args.py_runs), "--json", js,
           "--out", args.py_out or os.path.join(tmp, "results_python.md")]
    if args.memray_path:
        cmd += ["--memray-path", args.memray_path]
    if args.quick:
        cmd += ["--quick", "--only", "py_alloc_churn,json_roundtrip,threadpool_dicts,np_mixed"]
    if args.py_only:
        cmd += ["--only", args.py_only]
    if args.py_modes:
        cmd += ["--modes", args.py_modes]
    log("[python] " + " ".join(cmd))
    # Streamed, so that progress shows while it runs (it is the long part).
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    tail = []
    for line in p.stdout:
        tail = (tail + [line])[-20:]
        if line.startswith("[run "):
            log("[python] " + line.rstrip())
    p.wait()
    r = subprocess.CompletedProcess(cmd, p.returncode, "".join(tail))
    try:
        with open(js) as f:
            data = json.load(f)
    except (OSError, ValueError):
        return [f"python section failed (rc {r.returncode}): " + r.stdout[-500:].replace("\n", " ")]
    for m in data["medians"]:
        ev = m.get("events")
        rows.append({"section": "python", "workload": m["workload"], "mode": m["mode"], "n": m["n"],
                     "wall": m["wall"], "cpu": m["cpu"], "rss_kb": m["rss_kb"], "size": m["size"],
                     "bpe": ratio(m["size"], ev) if ev else None})
    return [f"python: {x}" for x in data.get("failed", [])]


def table(rows):
    base = {(r["section"], r["workload"]): r for r in rows if r["mode"] == "plain"}
    md = ["| section | workload | mode | n | wall s | ×plain | CPU s | ×plain | max RSS MB | +RSS MB "
          "| capture MB | B/event | Ir/event |", "|" + "---|" * 13]
    for r in rows:
        b = base.get((r["section"], r["workload"]), {})
        drss = (r["rss_kb"] - b["rss_kb"]) / 1024 if r.get("rss_kb") and b.get("rss_kb") else None
        md.append(f"| {r['section']} | {r['workload']} | {r['mode']} | {r.get('n', '-')} "
                  f"| {fmt(r.get('wall'), '.3f')} | {fmt(ratio(r.get('wall'), b.get('wall')), '.2f')} "
                  f"| {fmt(r.get('cpu'), '.3f')} | {fmt(ratio(r.get('cpu'), b.get('cpu')), '.2f')} "
                  f"| {fmt(r.get('rss_kb') and r['rss_kb'] / 1024, '.1f')} "
                  f"| {fmt(drss if r['mode'] != 'plain' else None, '+.1f')} "
                  f"| {fmt(r.get('size') and r['size'] / 1e6, '.2f')} | {fmt(r.get('bpe'), '.2f')} "
                  f"| {fmt(r.get('ir'), '.0f')} |")
    return md


def targets(rows):
    """The issue's targets, each: met / NOT met / not measured."""
    R = {(r["section"], r["workload"], r["mode"]): r for r in rows}

    def x(sec, w, m, k="cpu"):
        a, b = R.get((sec, w, m)), R.get((sec, w, "plain"))
        return ratio(a.get(k), b.get(k)) if a and b else None

    out = []

    def verdict(label, val, limit, unit="×"):
        if val is None:
            out.append(f"- {label}: not measured")
        else:
            out.append(f"- {label}: {val:.2f}{unit} (target ≤ {limit}{unit}): "
                       + ("met" if val <= limit else "**NOT met**"))
    sm = "tracker " + " ".join(SAMPLE)
    verdict("allocbench 1T tracker, CPU", x("allocbench", "ring 1T", "tracker"), 2.0)
    verdict("allocbench 2T tracker, CPU", x("allocbench", "ring 2T", "tracker"), 2.2)
    t1 = R.get(("allocbench", "ring 1T", "tracker"))
    verdict("allocbench 1T tracker, bytes/event", t1 and t1.get("bpe"), 5.0, " B")
    verdict(f"allocbench 1T {sm}, CPU", x("allocbench", "ring 1T", sm), 1.5)
    verdict(f"allocbench 2T {sm}, CPU", x("allocbench", "ring 2T", sm), 1.5)
    for w, limit in (("import torch", 2.5), ("torch_train 30 steps", 1.4)):
        verdict(f"{w}, tracker (hybrid), wall", x("torch", w, "tracker", "wall"), limit)
        t, p = R.get(("torch", w, "tracker")), R.get(("torch", w, "plain"))
        verdict(f"{w}, tracker, extra peak RSS",
                (t["rss_kb"] - p["rss_kb"]) / 1024 if t and p and t.get("rss_kb") and p.get("rss_kb")
                else None, 40, " MB")
    pyw = sorted({r["workload"] for r in rows if r["section"] == "python" and r["workload"] != "empty"})
    for mine, theirs in (("tracker", "memray"),
                         ("tracker --python-allocators", "memray --trace-python-allocators")):
        worse, size_bad, n = [], [], 0
        for w in pyw:
            a, b = x("python", w, mine), x("python", w, theirs)
            if a is None or b is None:
                continue
            n += 1
            if a >= b:
                worse.append(f"{w} {a:.2f}× vs {b:.2f}×")
            sa, sb = R[("python", w, mine)].get("size"), R[("python", w, theirs)].get("size")
            if sa and sb and sa > 2 * sb:
                size_bad.append(f"{w} {sa / 1e6:.2f} MB vs {sb / 1e6:.2f} MB")
        if not n:
            out.append(f"- `{mine}` vs `{theirs}`: not measured")
            continue
        out.append(f"- `{mine}` CPU below `{theirs}` on all {n} workloads: "
                   + ("met" if not worse else "**NOT met** on " + "; ".join(worse)))
        out.append(f"- `{mine}` capture ≤ 2× `{theirs}`'s: "
                   + ("met" if not size_bad else "**NOT met** on " + "; ".join(size_bad)))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build-bench",
                    help="meson build dir with bench=true (tracker, libtracker.so, bench/allocbench)")
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--memray-path", default=os.environ.get("MEMRAY_PATH"),
                    help="PYTHONPATH for `python -m memray` (default $MEMRAY_PATH); else no memray rows")
    ap.add_argument("--sections", default=",".join(SECTIONS))
    ap.add_argument("--quick", action="store_true", help="small sizes, few runs: a few minutes")
    ap.add_argument("--reps", type=int, default=None, help="allocbench/python runs (default 5; quick 3)")
    ap.add_argument("--pairs", type=int, default=None, help="allocbench pairs/thread (default 2M; quick 200k)")
    ap.add_argument("--py-only", default=None, help="python workloads subset (run_python_bench --only)")
    ap.add_argument("--py-modes", default=None, help="python modes subset (run_python_bench --modes)")
    ap.add_argument("--py-out", default=None, help="also keep run_python_bench's own markdown here")
    ap.add_argument("--out", default=os.path.join(HERE, "results_all.md"))
    ap.add_argument("--timeout", type=float, default=900)
    args = ap.parse_args()
    args.reps = args.reps or (3 if args.quick else 5)
    args.pairs = args.pairs or (200000 if args.quick else 2000000)
    args.torch_reps = 1 if args.quick else args.reps
    args.py_runs = 1 if args.quick else args.reps
    sections = args.sections.split(",")
    if set(sections) - set(SECTIONS):
        run_bench.die(f"unknown section(s): {','.join(set(sections) - set(SECTIONS))}")

    build = run_bench.find_build(args.build)
    tracker = os.path.join(build, "tracker")
    bench = os.path.join(build, "bench", "allocbench")
    if not os.access(tracker, os.X_OK):
        run_bench.die(f"no tracker at {tracker}")
    if ("allocbench" in sections or "callgrind" in sections) and not os.access(bench, os.X_OK):
        run_bench.die(f"no allocbench at {bench}: meson setup {args.build} -Dbench=true")
    python = shutil.which(args.python) or args.python
    heaptrack = shutil.which("heaptrack")
    cfgs, notes = tracker_configs(tracker, heaptrack)
    rows = []
    tmp = tempfile.mkdtemp(prefix="trk-all-")
    try:
        if "allocbench" in sections:
            section_allocbench(args, bench, cfgs, tmp, rows)
        if "callgrind" in sections:
            notes += section_callgrind(args, bench, cfgs, tmp, rows)
        if "torch" in sections:
            notes += section_torch(args, python, tracker, tmp, rows)
        if "python" in sections:
            notes += section_python(args, python, tracker, tmp, rows)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    md = ["# Capture cost: allocbench, callgrind, import torch, Python workloads (issue 12)", ""]
    md.append(f"{datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}; `bench/run_all.py"
              + (" --quick" if args.quick else "") + f"`; allocbench {args.pairs} pairs/thread, medians of "
              f"{args.reps} interleaved runs; torch {args.torch_reps}, python {args.py_runs} run(s).")
    md.append("")
    md += run_bench.env_info(tracker, heaptrack)
    md.append(f"- python: {python}; memray: {args.memray_path or 'not given (no memray rows)'}")
    md += [f"- {n}" for n in notes]
    md.append("")
    md += table(rows)
    md.append("")
    md.append("CPU: user+sys of the whole process tree. max RSS: largest process of the tree. "
              "B/event: capture bytes over the program's events (allocbench: its own count; python: "
              "`tracker stats` events). Ir/event: callgrind, (Ir at 100000 pairs − Ir at 60000) / 80000, "
              "whole process tree, allocbench ring 1 thread.")
    md.append("")
    md.append("## Targets")
    md.append("")
    md += targets(rows)
    text = "\n".join(md) + "\n"
    print()
    print(text)
    with open(args.out, "w") as f:
        f.write(text)
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
