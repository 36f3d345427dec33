#!/usr/bin/env python3
"""Time allocbench plain, under `tracker run` and under heaptrack; write a table.

For each workload (ring 1 thread, ring 2 threads, temp 1 thread) and each
config (plain, tracker, heaptrack if installed) this records, per repetition:
  - loop s     the loop time allocbench measures itself (monotonic clock),
               i.e. the in-process cost of tracking while the app runs;
  - wall s     the whole command, including start-up and the tracker's (or
               heaptrack's interpreter/compressor) drain after the app exits;
  - CPU s      user+sys of the whole process tree (os.wait4 rusage includes
               every descendant that was waited for), which waiting for a
               shared CPU does not inflate;
  - app RSS    allocbench's own peak RSS (it reports getrusage on stderr);
  - tree RSS   the largest peak RSS of any process in the tree (wait4);
  - capture    output file size, and bytes per event, where events are the
               allocations + frees allocbench counted itself.
Configs are interleaved within each repetition (with a rotating order) so that
background load hits all configs alike; medians over repetitions are reported.

Usage: bench/run_bench.py [--build build] [--pairs N] [--reps N] [--quick]
                          [--out bench/results.md] [--configs plain,tracker,sampled,heaptrack]
                          [--sample-bytes N] [--callgrind]

Config `sampled` is `tracker run --sample-bytes N` (default 524288).
--callgrind counts instructions instead of timing: for each config, the Ir of
the whole process tree on ring 1T at --pairs 20000 and 60000 (valgrind
--tool=callgrind --trace-children=yes); the difference over the 80,000
events between them is the cost of one event, start-up and exit cancelled.
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
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (name, allocbench args besides --pairs/--seed)
WORKLOADS = [
    ("ring 1T", ["--mode", "ring", "--threads", "1"]),
    ("ring 2T", ["--mode", "ring", "--threads", "2"]),
    ("temp 1T", ["--mode", "temp", "--threads", "1"]),
]

LOOP_RE = re.compile(r"loop_s=([0-9.]+) events=([0-9]+)")
RSS_RE = re.compile(r"allocbench: maxrss_kb=([0-9]+)")


class RunError(Exception):
    pass


def die(msg):
    print(f"run_bench: {msg}", file=sys.stderr)
    sys.exit(1)


def find_build(arg):
    """The build dir as given (relative to cwd), else relative to the repo."""
    for cand in (arg, os.path.join(REPO, arg)):
        if os.path.isdir(cand):
            return os.path.abspath(cand)
    die(f"build directory '{arg}' not found (run: meson setup {arg} && ninja -C {arg})")


TIME = "/usr/bin/time"


def run_one(cmd, tmpdir, timeout):
    """Run cmd; return dict of measurements. stdout/stderr go to files and the
    child is reaped with os.wait4 so that its rusage (CPU, max RSS of the
    tree) is available, which subprocess does not expose.

    Peak RSS survives execve, so a process forked from this (large) Python
    process inherits Python's RSS as its starting maximum. When GNU time is
    available the command is therefore started through it: time is small,
    forks the real command and reports the tree's CPU and max RSS itself."""
    out_path = os.path.join(tmpdir, "stdout")
    err_path = os.path.join(tmpdir, "stderr")
    time_path = os.path.join(tmpdir, "time")
    use_time = os.access(TIME, os.X_OK)
    if use_time:
        cmd = [TIME, "-f", "%U %S %M", "-o", time_path] + cmd
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        # Block in wait4 (no polling: the machine may have only 2 CPUs);
        # a timer kills the whole process group if the run hangs.
        timed_out = []
        def kill():
            timed_out.append(True)
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            _, status, ru = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        wall = time.monotonic() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if timed_out:
        raise RunError(f"timed out after {timeout} s")
    with open(out_path, errors="replace") as f:
        stdout = f.read()
    with open(err_path, errors="replace") as f:
        stderr = f.read()
    m = LOOP_RE.search(stdout)
    if proc.returncode != 0 or not m:
        tail = (stdout + stderr)[-2000:]
        raise RunError(f"exit status {proc.returncode}"
                       + ("" if m else ", no loop_s line") + f"\n--- output tail ---\n{tail}")
    rss = RSS_RE.search(stderr) or RSS_RE.search(stdout)
    cpu, tree_rss = ru.ru_utime + ru.ru_stime, ru.ru_maxrss
    if use_time:
        try:
            with open(time_path) as f:
                u, s, k = f.read().split()[-3:]
            cpu, tree_rss = float(u) + float(s), int(k)
        except (OSError, ValueError):
            pass  # keep the wait4 figures
    return {
        "loop": float(m.group(1)),
        "events": int(m.group(2)),
        "wall": wall,
        "cpu": cpu,
        "app_rss_kb": int(rss.group(1)) if rss else None,
        "tree_rss_kb": tree_rss,
    }


def capture_size(pattern):
    files = glob.glob(pattern)
    return sum(os.path.getsize(f) for f in files) if files else None


def make_configs(tracker, heaptrack, sample_bytes=None):
    """Each config: name -> function(bench_cmd, tmpdir) -> (cmd, capture glob)."""
    configs = [("plain", lambda cmd, d: (cmd, None))]
    if tracker:
        configs.append(("tracker", lambda cmd, d: (
            [tracker, "run", "-q", "-o", os.path.join(d, "cap.trk"), "-f", "--"] + cmd,
            os.path.join(d, "cap.trk"))))
    if tracker and sample_bytes:
        configs.append(("sampled", lambda cmd, d: (
            [tracker, "run", "-q", "-o", os.path.join(d, "cap.trk"), "-f", "--sample-bytes",
             str(sample_bytes), "--"] + cmd,
            os.path.join(d, "cap.trk"))))
    if heaptrack:
        # heaptrack appends .zst (or .gz) to the -o name.
        configs.append(("heaptrack", lambda cmd, d: (
            [heaptrack, "-o", os.path.join(d, "ht")] + cmd,
            os.path.join(d, "ht.*"))))
    return configs


def clean_dir(d):
    for f in os.listdir(d):
        p = os.path.join(d, f)
        if os.path.isfile(p):
            os.unlink(p)


def tracker_stats(tracker, path, timeout):
    """allocations + frees according to `tracker stats --json`, or None."""
    try:
        r = subprocess.run([tracker, "stats", "--json", path], capture_output=True,
                           text=True, timeout=timeout)
        if r.returncode != 0:
            return None, f"tracker stats exited {r.returncode}: {r.stderr.strip()[-300:]}"
        js = json.loads(r.stdout)
        totals = js.get("totals", js) if isinstance(js, dict) else {}
        return int(totals["allocations"]) + int(totals["frees"]), None
    except (OSError, ValueError, KeyError, TypeError, subprocess.TimeoutExpired) as e:
        return None, f"tracker stats failed: {e!r}"


def med(vals):
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def fmt(v, spec):
    return "–" if v is None else format(v, spec)


def ratio(a, b):
    return a / b if a is not None and b else None


def sh_quote(cmd):
    return " ".join(c if re.fullmatch(r"[\w@%+=:,./-]+", c) else "'" + c.replace("'", "'\\''") + "'"
                    for c in cmd)


def env_info(tracker, heaptrack):
    lines = []
    try:
        with open("/proc/cpuinfo") as f:
            model = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "?")
    except OSError:
        model = "?"
    lines.append(f"- host: {platform.node()}, {os.cpu_count()} CPUs ({model}), Linux {platform.release()}")
    try:
        with open("/proc/loadavg") as f:
            lines.append(f"- load average at start: {' '.join(f.read().split()[:3])}")
    except OSError:
        pass
    try:
        rev = subprocess.run(["git", "-C", REPO, "describe", "--always", "--dirty"],
                             capture_output=True, text=True, timeout=10).stdout.strip()
        lines.append(f"- tracker source: {rev or '?'} ({tracker or 'tracker not run'})")
    except (OSError, subprocess.TimeoutExpired):
        pass
    if heaptrack:
        try:
            v = subprocess.run([heaptrack, "--version"], capture_output=True, text=True,
                               timeout=10).stdout.strip().splitlines()
            lines.append(f"- heaptrack: {v[0] if v else '?'}")
        except (OSError, subprocess.TimeoutExpired):
            lines.append("- heaptrack: ?")
    else:
        lines.append("- heaptrack: not run (not installed, or left out by --configs)")
    return lines


def callgrind_ir(cmd, d, timeout):
    """Summed Ir of every process of cmd's tree under callgrind."""
    clean_dir(d)
    vg = ["valgrind", "--tool=callgrind", "--trace-children=yes",
          "--callgrind-out-file=" + os.path.join(d, "cg.%p")]
    subprocess.run(vg + cmd, cwd=d, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   timeout=timeout, check=True)
    total = 0
    for f in glob.glob(os.path.join(d, "cg.*")):
        with open(f, errors="replace") as fh:
            for line in fh:
                if line.startswith(("totals:", "summary:")):
                    total += int(line.split()[1])
                    break
    return total


def callgrind_main(args, bench, configs):
    """Instructions per event of each config (ring 1T): see the usage."""
    if not shutil.which("valgrind"):
        die("valgrind not installed")
    lo, hi = 20000, 60000
    rows = []
    tmp = tempfile.mkdtemp(prefix="trk-bench-cg-")
    try:
        for cname, build_cmd in configs:
            if cname == "heaptrack":
                continue  # its interpreter is a pipeline of its own: not comparable
            ir = []
            for pairs in (lo, hi):
                cmd = [bench, "--pairs", str(pairs), "--seed", str(args.seed), "--mode", "ring",
                       "--threads", "1"]
                full, _ = build_cmd(cmd, tmp)
                ir.append(callgrind_ir(full, tmp, args.timeout))
            per = (ir[1] - ir[0]) / (2 * (hi - lo))
            rows.append((cname, ir[0], ir[1], per))
            print(f"{cname:9s} {per:7.0f} Ir/event", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    base = rows[0][3] if rows and rows[0][0] == "plain" else None
    print("\n| config | Ir at 20000 pairs | Ir at 60000 pairs | Ir/event | × plain |")
    print("|---|---|---|---|---|")
    for cname, a, b, per in rows:
        print(f"| {cname} | {a} | {b} | {per:.0f} | {fmt(ratio(per, base), '.2f')} |")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build", help="meson build dir (default: build)")
    ap.add_argument("--pairs", type=int, default=5000000, help="malloc/free pairs per thread")
    ap.add_argument("--reps", type=int, default=3, help="repetitions (medians reported)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="smoke run: 500000 pairs, 1 rep")
    ap.add_argument("--out", default=os.path.join(REPO, "bench", "results.md"),
                    help="markdown results file (default: bench/results.md)")
    ap.add_argument("--configs", default="plain,tracker,heaptrack",
                    help="comma-separated subset of plain,tracker,sampled,heaptrack "
                         "(plain is always run)")
    ap.add_argument("--sample-bytes", type=int, default=524288,
                    help="N of config sampled: tracker run --sample-bytes N (default 524288)")
    ap.add_argument("--callgrind", action="store_true",
                    help="instructions per event (callgrind) instead of timings")
    ap.add_argument("--timeout", type=float, default=600, help="per-run limit in seconds")
    args = ap.parse_args()
    if args.quick:
        args.pairs, args.reps = 500000, 1

    build = find_build(args.build)
    tracker = os.path.join(build, "tracker")
    bench = os.path.join(build, "bench", "allocbench")
    wanted = set(args.configs.split(",")) | {"plain"}
    known = {"plain", "tracker", "sampled", "heaptrack"}
    if wanted - known:
        die(f"unknown config(s) in --configs: {','.join(sorted(wanted - known))}")
    traced = wanted & {"tracker", "sampled"}
    need = [(bench, "allocbench")] + ([(tracker, "tracker binary")] if traced else [])
    for path, what in need:
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            die(f"{what} not found at {path} (build it: ninja -C {build})")
    heaptrack = shutil.which("heaptrack") if "heaptrack" in wanted else None

    configs = make_configs(tracker if traced else None, heaptrack,
                           args.sample_bytes if "sampled" in wanted else None)
    if "tracker" not in wanted:
        configs = [c for c in configs if c[0] != "tracker"]
    if args.callgrind:
        return callgrind_main(args, bench, configs)
    cfg_names = [c[0] for c in configs]
    # results[workload][config] = list of per-rep dicts (failed runs omitted)
    results = {w: {c: [] for c in cfg_names} for w, _ in WORKLOADS}
    sizes = {w: {c: [] for c in cfg_names} for w, _ in WORKLOADS}
    failed = {}  # (workload, config) -> message; such a config is not retried
    captured = {}  # workload -> (tracker stats events, note)
    raw_lines = []

    tmp_root = tempfile.mkdtemp(prefix="trk-bench-")
    try:
        for rep in range(args.reps):
            for wi, (wname, wargs) in enumerate(WORKLOADS):
                cmd = [bench, "--pairs", str(args.pairs), "--seed", str(args.seed)] + wargs
                # Rotate the config order each repetition and workload so that
                # no config always runs first (cold) or right after another.
                k = (rep + wi) % len(configs)
                for cname, build_cmd in configs[k:] + configs[:k]:
                    if (wname, cname) in failed:
                        continue
                    d = os.path.join(tmp_root, cname)
                    os.makedirs(d, exist_ok=True)
                    clean_dir(d)
                    full, cap = build_cmd(cmd, d)
                    print(f"[rep {rep + 1}/{args.reps}] {wname:8s} {cname:9s} ", end="", flush=True)
                    try:
                        r = run_one(full, d, args.timeout)
                    except RunError as e:
                        failed[(wname, cname)] = f"`{sh_quote(full)}`: {e}"
                        print(f"FAILED\n  command: {sh_quote(full)}\n  {e}", flush=True)
                        continue
                    r["size"] = capture_size(cap) if cap else None
                    results[wname][cname].append(r)
                    print(f"loop {r['loop']:.3f} s  wall {r['wall']:.3f} s  cpu {r['cpu']:.3f} s"
                          + (f"  capture {r['size'] / 1e6:.1f} MB" if r["size"] else ""), flush=True)
                    raw_lines.append(f"{rep + 1},{wname},{cname},{r['loop']:.4f},{r['wall']:.4f},"
                                     f"{r['cpu']:.4f},{r['events']},{r['size'] or ''},"
                                     f"{r['app_rss_kb'] or ''},{r['tree_rss_kb']}")
                    # Once per workload, check that the capture holds at
                    # least the events the program made (nothing dropped).
                    if cname in ("tracker", "sampled") and rep == args.reps - 1 and r["size"]:
                        n, note = tracker_stats(tracker, cap, args.timeout)
                        key = wname if cname == "tracker" else f"{wname} ({cname})"
                        captured[key] = (n, note, r["events"])
    finally:
        shutil.rmtree(tmp_root, ignore_errors=True)

    # ---- report ----
    md = []
    md.append("# allocbench: tracker vs heaptrack")
    md.append("")
    md.append(f"{datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}; {args.pairs} malloc/free pairs per "
              f"thread, {args.reps} rep(s), medians; generated by `bench/run_bench.py`.")
    md.append("")
    md += env_info(tracker if traced else None, heaptrack)
    md.append("")
    md.append("| workload | config | loop s | × plain | wall s | × plain | CPU s | × plain "
              "| app RSS MiB | tree RSS MiB | capture MB | B/event |")
    md.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
    summary = {}
    for wname, _ in WORKLOADS:
        base = results[wname]["plain"]
        b_loop, b_wall, b_cpu = (med([r[k] for r in base]) for k in ("loop", "wall", "cpu"))
        for cname in cfg_names:
            rs = results[wname][cname]
            if not rs:
                md.append(f"| {wname} | {cname} | failed | | | | | | | | | |")
                continue
            loop, wall, cpu = (med([r[k] for r in rs]) for k in ("loop", "wall", "cpu"))
            app_rss = med([r["app_rss_kb"] for r in rs])
            tree_rss = med([r["tree_rss_kb"] for r in rs])
            size = med([r["size"] for r in rs])
            events = med([r["events"] for r in rs])
            summary[(wname, cname)] = (loop, wall, cpu, size)
            md.append(
                f"| {wname} | {cname} | {fmt(loop, '.3f')} | {fmt(ratio(loop, b_loop), '.2f')} "
                f"| {fmt(wall, '.3f')} | {fmt(ratio(wall, b_wall), '.2f')} "
                f"| {fmt(cpu, '.3f')} | {fmt(ratio(cpu, b_cpu), '.2f')} "
                f"| {fmt(app_rss and app_rss / 1024, '.1f')} | {fmt(tree_rss / 1024, '.1f')} "
                f"| {fmt(size and size / 1e6, '.1f')} | {fmt(ratio(size, events), '.2f')} |")
    if heaptrack and "tracker" in cfg_names:
        md.append("")
        md.append("tracker speed-up over heaptrack (heaptrack time / tracker time; size: heaptrack bytes "
                  "/ tracker bytes, >1 = tracker smaller):")
        md.append("")
        md.append("| workload | loop | wall | CPU | capture size |")
        md.append("|---|---|---|---|---|")
        for wname, _ in WORKLOADS:
            t, h = summary.get((wname, "tracker")), summary.get((wname, "heaptrack"))
            if not t or not h:
                md.append(f"| {wname} | – | – | – | – |")
                continue
            md.append(f"| {wname} | {fmt(ratio(h[0], t[0]), '.2f')} | {fmt(ratio(h[1], t[1]), '.2f')} "
                      f"| {fmt(ratio(h[2], t[2]), '.2f')} | {fmt(ratio(h[3], t[3]), '.2f')} |")
    if captured:
        md.append("")
        md.append("Capture check (`tracker stats --json`, last rep: allocations + frees vs the program's "
                  "own count; libc's own allocations make it slightly larger):")
        md.append("")
        for wname, (n, note, ev) in captured.items():
            if n is None:
                md.append(f"- {wname}: {note}")
            else:
                flag = "ok" if n >= ev else "**MISSING EVENTS**"
                md.append(f"- {wname}: captured {n}, program {ev} ({flag})")
    if failed:
        md.append("")
        md.append("Failures:")
        md.append("")
        for (wname, cname), msg in failed.items():
            md.append(f"- {wname} / {cname}: " + msg.replace("\n", "\n  "))
    md.append("")
    md.append("<details><summary>raw runs</summary>")
    md.append("")
    md.append("```")
    md.append("rep,workload,config,loop_s,wall_s,cpu_s,events,capture_bytes,app_rss_kb,tree_rss_kb")
    md += raw_lines
    md.append("```")
    md.append("</details>")
    text = "\n".join(md) + "\n"

    print()
    print(text[:text.index("<details>")].rstrip())
    out = args.out
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as f:
        f.write(text)
    print(f"\nwritten to {out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
