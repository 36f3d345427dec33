#!/usr/bin/env python3
"""Time Python workloads plain, under `tracker run` and under memray; write a table.

The side-by-side run of issue 5: the slowdown of `tracker run` on Python
scripts (hybrid and --python-only, each with and without --python-allocators)
against plain Python and against memray, on the workloads of
../shared/workloads/ (allocation churn, numpy, imports, call-heavy) plus an
empty script (one print) for the start-up cost. The figures memray and
heaptrack reached on the same scripts are in
../shared/reference/memray-baseline.md; this produces the same kind of table.

Per run it records:
  - wall s     the whole command (start-up, the script, writing the capture);
  - CPU s      user+sys of the whole process tree (GNU time, else wait4);
  - loop s     the time the script measures itself (`loop_s=` on stdout),
               i.e. the in-process cost while the script runs;
  - max RSS    the largest peak RSS of any process in the tree;
  - capture    size of every capture file the run wrote.
Every tracker capture is checked with `tracker stats --json`: lost events,
truncation, checksum failures, bad chunks or broken streams are flagged in the
table. Modes are interleaved within each round (rotating order) and medians
over rounds are reported. For calls_only the per-call hook cost is
(loop_mode - loop_plain) / calls, in ns.

Usage: bench/run_python_bench.py [--tracker build/tracker] [--python /usr/bin/python3]
           [--memray-path DIR] [--workloads DIR] [--runs N] [--only W,...]
           [--modes M,...] [--out bench/results_python.md]
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

# (name, file in --workloads or None for the generated empty script, needs
# numpy, argument for --quick: the script's iteration count, ~10x smaller).
# The first five are ../shared/workloads/ (copied into bench/workloads/);
# the rest are the more realistic ones of issue 12.
WORKLOADS = [
    ("empty", None, False, None),
    ("py_alloc_churn", "py_alloc_churn.py", False, "30000"),
    ("np_alloc", "np_alloc.py", True, "40"),
    ("import_many", "import_many.py", False, None),
    ("calls_only", "calls_only.py", False, "200000"),
    ("json_roundtrip", "json_roundtrip.py", False, "300"),
    ("object_graph", "object_graph.py", False, "50"),
    ("regex_text", "regex_text.py", False, "100"),
    ("threadpool_dicts", "threadpool_dicts.py", False, "90"),
    ("iter_pipeline", "iter_pipeline.py", False, "35"),
    ("np_mixed", "np_mixed.py", True, "3000"),
]

# (name, tool, extra flags). Tracker flags are checked against `tracker run
# --help`; memray modes need --memray-path.
MODES = [
    ("plain", "plain", []),
    ("tracker", "tracker", []),
    ("tracker --python-only", "tracker", ["--python-only"]),
    ("tracker --python-allocators", "tracker", ["--python-allocators"]),
    ("tracker --python-only --python-allocators", "tracker", ["--python-only", "--python-allocators"]),
    ("memray", "memray", []),
    ("memray --native", "memray", ["--native"]),
    ("memray --trace-python-allocators", "memray", ["--trace-python-allocators"]),
]

LOOP_RE = re.compile(r"loop_s=([0-9.]+)")
CALLS_RE = re.compile(r"\bcalls=([0-9]+)")
# `tracker stats --json` keys that must be zero/false for a sound capture.
CAPTURE_BAD_KEYS = ("truncated", "lost_events", "bytes_lost", "checksum_failures", "bad_chunks",
                    "broken_streams")
TIME = "/usr/bin/time"


class RunError(Exception):
    pass


def die(msg):
    print(f"run_python_bench: {msg}", file=sys.stderr)
    sys.exit(1)


def find_file(arg, what, want_dir=False):
    """arg as given (relative to cwd), else relative to the repo."""
    test = os.path.isdir if want_dir else os.path.isfile
    for cand in (arg, os.path.join(REPO, arg)):
        if test(cand):
            return os.path.abspath(cand)
    return None


def run_one(cmd, env, tmpdir, timeout):
    """Run cmd; return measurements. Started through GNU time when there is
    one: peak RSS survives execve, so a command forked straight from this
    Python process would inherit its RSS as a starting maximum; time is small
    and reports the tree's CPU and largest max RSS itself."""
    out_path = os.path.join(tmpdir, "stdout")
    err_path = os.path.join(tmpdir, "stderr")
    time_path = os.path.join(tmpdir, "time")
    use_time = os.access(TIME, os.X_OK)
    if use_time:
        cmd = [TIME, "-f", "%M", "-o", time_path] + cmd
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=env,
                                cwd=tmpdir, start_new_session=True)
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
            _, status, ru = os.wait4(proc.pid, 0)  # blocks; no polling on a 2-CPU box
        finally:
            timer.cancel()
        wall = time.monotonic() - t0
    rc = os.waitstatus_to_exitcode(status)
    if timed_out:
        raise RunError(f"timed out after {timeout} s")
    with open(out_path, errors="replace") as f:
        stdout = f.read()
    with open(err_path, errors="replace") as f:
        stderr = f.read()
    if rc != 0:
        raise RunError(f"exit status {rc}\n--- output tail ---\n{(stdout + stderr)[-2000:]}")
    # CPU from wait4 (microseconds; time's own share is negligible), RSS
    # from GNU time (its %U/%S have only 10 ms resolution).
    cpu, rss_kb = ru.ru_utime + ru.ru_stime, ru.ru_maxrss
    if use_time:
        try:
            with open(time_path) as f:
                rss_kb = int(f.read().split()[-1])
        except (OSError, ValueError, IndexError):
            pass  # keep the wait4 figure
    m = LOOP_RE.search(stdout)
    c = CALLS_RE.search(stdout)
    return {"wall": wall, "cpu": cpu, "rss_kb": rss_kb,
            "loop": float(m.group(1)) if m else None,
            "calls": int(c.group(1)) if c else None}


def check_capture(tracker, path, timeout):
    """(events, problems) of one tracker capture; problems is a list of str."""
    try:
        r = subprocess.run([tracker, "stats", "--json", path], capture_output=True, text=True,
                           timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, [f"tracker stats failed: {e!r}"]
    if r.returncode != 0:
        return None, [f"tracker stats exited {r.returncode}: {r.stderr.strip()[-300:]}"]
    try:
        js = json.loads(r.stdout)
    except ValueError as e:
        return None, [f"tracker stats --json: bad JSON ({e})"]
    problems = [f"{k}={js[k]}" for k in CAPTURE_BAD_KEYS if js.get(k)]
    missing = [k for k in ("truncated", "lost_events") if k not in js]
    if missing:
        problems.append("no " + "/".join(missing) + " in stats")
    ev = js.get("events")
    if ev is None and "allocations" in js and "frees" in js:
        ev = js["allocations"] + js["frees"]
    return ev, problems


def clean_dir(d):
    for f in os.listdir(d):
        p = os.path.join(d, f)
        if os.path.isfile(p) or os.path.islink(p):
            os.unlink(p)


def med(vals):
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def ratio(a, b):
    return a / b if a is not None and b else None


def sh_quote(cmd):
    return " ".join(c if re.fullmatch(r"[\w@%+=:,./-]+", c) else "'" + c.replace("'", "'\\''") + "'"
                    for c in cmd)


def tracker_run_help(tracker):
    try:
        r = subprocess.run([tracker, "run", "--help"], capture_output=True, text=True, timeout=30)
        return r.stdout + r.stderr
    except (OSError, subprocess.TimeoutExpired):
        return ""


def has_flag(help_text, flag):
    return re.search(re.escape(flag) + r"(?![\w-])", help_text) is not None


def env_info(tracker, python, memray_path, memray_version, numpy_version, load_start):
    lines = []
    try:
        with open("/proc/cpuinfo") as f:
            model = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "?")
    except OSError:
        model = "?"
    lines.append(f"- host: {platform.node()}, {os.cpu_count()} CPUs ({model}), Linux {platform.release()}")
    if load_start:
        lines.append(f"- load average at the start: {' '.join(load_start)}")
    try:
        rev = subprocess.run(["git", "-C", REPO, "describe", "--always", "--dirty"],
                             capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        rev = "?"
    lines.append(f"- tracker: source {rev or '?'}, binary {tracker or 'not run'}")
    try:
        pv = subprocess.run([python, "-c", "import sys; print(sys.version.split()[0])"],
                            capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        pv = "?"
    lines.append(f"- python: {python} (CPython {pv}), numpy {numpy_version or 'not installed'}")
    lines.append(f"- memray: {memray_version + ' from ' + memray_path if memray_version else 'not run'}")
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tracker", default="build/tracker",
                    help="tracker binary (default build/tracker; libtracker.so must be beside it)")
    ap.add_argument("--python", default="/usr/bin/python3", help="interpreter (default /usr/bin/python3)")
    ap.add_argument("--memray-path", default=os.environ.get("MEMRAY_PATH"),
                    help="PYTHONPATH under which `python -m memray` works (default: $MEMRAY_PATH); "
                         "memray modes are skipped without it")
    ap.add_argument("--workloads", default=os.path.join(REPO, "bench", "workloads"),
                    help="directory of the workload scripts (default bench/workloads)")
    ap.add_argument("--quick", action="store_true",
                    help="each script with ~10x fewer iterations (a smoke run; ratios are rougher)")
    ap.add_argument("--json", default=None,
                    help="also write the medians as JSON here (bench/run_all.py reads it)")
    ap.add_argument("--runs", type=int, default=3, help="rounds (medians reported; default 3)")
    ap.add_argument("--only", default=None,
                    help="comma-separated workloads: " + ",".join(w[0] for w in WORKLOADS))
    ap.add_argument("--modes", default=None,
                    help="comma-separated subset of: " + ", ".join(m[0] for m in MODES)
                         + " (plain is always run)")
    ap.add_argument("--out", default=os.path.join(REPO, "bench", "results_python.md"),
                    help="markdown results file (default bench/results_python.md)")
    ap.add_argument("--timeout", type=float, default=600, help="per-run limit in seconds")
    ap.add_argument("--note", action="append", default=[],
                    help="a line of context for the results file (repeatable)")
    args = ap.parse_args()

    notes = list(args.note)
    python = shutil.which(args.python) if os.sep not in args.python else args.python
    if not python or not os.access(python, os.X_OK):
        die(f"python '{args.python}' not found")
    python = os.path.abspath(python)
    wdir = find_file(args.workloads, "workloads", want_dir=True)
    if not wdir:
        die(f"workloads directory '{args.workloads}' not found")

    workloads = list(WORKLOADS)
    if args.only:
        want = args.only.split(",")
        unknown = set(want) - {w[0] for w in WORKLOADS}
        if unknown:
            die(f"unknown workload(s) in --only: {','.join(sorted(unknown))}")
        workloads = [w for w in WORKLOADS if w[0] in want]
    # The quick-run argument is dropped here; `script_args` keeps it.
    script_args = {w[0]: ([w[3]] if args.quick and w[3] else []) for w in workloads}
    workloads = [w[:3] for w in workloads]
    wanted_modes = None
    if args.modes:
        wanted_modes = set(args.modes.split(",")) | {"plain"}
        unknown = wanted_modes - {m[0] for m in MODES}
        if unknown:
            die(f"unknown mode(s) in --modes: {','.join(sorted(unknown))}")

    # Clean environment: nothing from the caller's PYTHONPATH/PYTHONHOME,
    # PYTHONMALLOC or preloads may change what is measured.
    base_env = {k: v for k, v in os.environ.items()
                if not (k.startswith("PYTHON") or k.startswith("MEMRAY") or k == "LD_PRELOAD"
                        or k.startswith("TRACKER"))}

    def py_ok(code, env=base_env):
        try:
            r = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=60, env=env)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return r.stdout.strip() if r.returncode == 0 else None

    numpy_version = py_ok("import numpy; print(numpy.__version__)")
    if not numpy_version:
        notes.append(f"np_alloc skipped: numpy cannot be imported by {python}")
        workloads = [w for w in workloads if not w[2]]

    tracker = find_file(args.tracker, "tracker")
    tracker_flags = {}
    tracker_python_flag = False
    if tracker and os.access(tracker, os.X_OK):
        help_text = tracker_run_help(tracker)
        for f in ("--python-only", "--python-allocators"):
            tracker_flags[f] = has_flag(help_text, f)
        tracker_python_flag = has_flag(help_text, "--python")
        if not tracker_python_flag:
            notes.append("`tracker run --help` has no --python: the tracker is given "
                         f"`{python} script.py` as the program")
    else:
        notes.append(f"tracker modes skipped: no tracker binary at {args.tracker}")
        tracker = None

    memray_env = None
    memray_version = None
    if args.memray_path:
        mp = os.path.abspath(args.memray_path)
        memray_env = dict(base_env, PYTHONPATH=mp)
        memray_version = py_ok("import memray; print(memray.__version__)", memray_env)
        if not memray_version:
            notes.append(f"memray modes skipped: `import memray` fails with PYTHONPATH={mp}")
            memray_env = None
    else:
        notes.append("memray modes skipped: no --memray-path")

    modes = []
    for name, tool, flags in MODES:
        if wanted_modes is not None and name not in wanted_modes:
            continue
        if tool == "tracker":
            if not tracker:
                continue
            missing = [f for f in flags if not tracker_flags.get(f)]
            if missing:
                notes.append(f"`{name}` skipped: `tracker run --help` does not list {', '.join(missing)}")
                continue
        if tool == "memray" and not memray_env:
            continue
        modes.append((name, tool, flags))
    mode_names = [m[0] for m in modes]

    try:
        with open("/proc/loadavg") as f:
            load_start = f.read().split()[:3]
    except OSError:
        load_start = None
    tmp_root = tempfile.mkdtemp(prefix="trk-pybench-")
    empty_py = os.path.join(tmp_root, "empty.py")
    with open(empty_py, "w") as f:
        f.write('print("empty")\n')

    def command(tool, flags, script, d, sargs):
        """(argv, env, capture glob) of one run in directory d."""
        cap = os.path.join(d, "cap.bin")
        if tool == "plain":
            return [python, script] + sargs, base_env, None
        if tool == "tracker":
            cmd = [tracker, "run", "-q", "-f", "-o", cap]
            if tracker_python_flag:
                cmd += ["--python", python] + flags + ["--", script]
            else:
                cmd += flags + ["--", python, script]
            return cmd + sargs, base_env, os.path.join(d, "cap*.bin")
        return ([python, "-m", "memray", "run", "-q", "-f"] + flags + ["-o", cap, script] + sargs,
                memray_env, os.path.join(d, "cap.bin*"))

    results = {w[0]: {m: [] for m in mode_names} for w in workloads}
    checks = {w[0]: {m: [] for m in mode_names} for w in workloads}  # (events, problems) per run
    failed = {}
    raw = []
    try:
        for rnd in range(args.runs):
            for wi, (wname, wfile, _) in enumerate(workloads):
                script = empty_py if wfile is None else os.path.join(wdir, wfile)
                if not os.path.isfile(script):
                    if rnd == 0:
                        notes.append(f"{wname} skipped: {script} not found")
                    continue
                k = (rnd + wi) % len(modes)
                for mname, tool, flags in modes[k:] + modes[:k]:
                    if (wname, mname) in failed:
                        continue
                    d = os.path.join(tmp_root, "run")
                    os.makedirs(d, exist_ok=True)
                    clean_dir(d)
                    cmd, env, cap_glob = command(tool, flags, script, d, script_args[wname])
                    print(f"[run {rnd + 1}/{args.runs}] {wname:14s} {mname:42s} ", end="", flush=True)
                    try:
                        r = run_one(cmd, env, d, args.timeout)
                    except RunError as e:
                        failed[(wname, mname)] = f"`{sh_quote(cmd)}`: {e}"
                        print(f"FAILED\n  command: {sh_quote(cmd)}\n  {e}", flush=True)
                        continue
                    caps = sorted(glob.glob(cap_glob)) if cap_glob else []
                    r["size"] = sum(os.path.getsize(c) for c in caps) if caps else None
                    if tool == "tracker":
                        ev_total, probs = 0, []
                        if not caps:
                            probs.append("no capture written")
                        for c in caps:
                            ev, p = check_capture(tracker, c, args.timeout)
                            ev_total = None if ev is None or ev_total is None else ev_total + ev
                            probs += [f"{os.path.basename(c)}: {x}" for x in p]
                        r["events"] = ev_total
                        checks[wname][mname].append(probs)
                    else:
                        r["events"] = None
                    results[wname][mname].append(r)
                    print(f"wall {r['wall']:.3f} s  cpu {r['cpu']:.3f} s  loop {fmt(r['loop'], '.3f')} s"
                          f"  rss {r['rss_kb'] / 1024:.1f} MB"
                          + (f"  capture {r['size'] / 1e6:.2f} MB" if r["size"] else "")
                          + (f"  events {r['events']}" if r["events"] else "")
                          + (("  CHECK: " + "; ".join(checks[wname][mname][-1]))
                             if tool == "tracker" and checks[wname][mname][-1] else ""), flush=True)
                    raw.append(f"{rnd + 1},{wname},{mname},{r['wall']:.4f},{r['cpu']:.4f},"
                               f"{fmt(r['loop'], '.4f')},{r['rss_kb']},{r['size'] or ''},"
                               f"{r['events'] if r['events'] is not None else ''}")
    finally:
        shutil.rmtree(tmp_root, ignore_errors=True)

    try:
        with open("/proc/loadavg") as f:
            load_end = f.read().split()[:3]
    except OSError:
        load_end = None
    if load_end:
        notes.append(f"load average at the end: {' '.join(load_end)}")
    busy = [x for x in [load_start, load_end] if x and float(x[1]) > 1.2 * (os.cpu_count() or 1) / 2]
    if busy:
        notes.append("**the machine was busy** (5-minute load above ~60% of its CPUs at the start or end): "
                     "wall and loop times include waiting for a CPU; CPU-time ratios are the steadier figure")

    # ---- medians ----
    S = {}  # (w, m) -> dict of medians
    for wname, _, _ in workloads:
        for m in mode_names:
            rs = results[wname][m]
            if not rs:
                continue
            S[(wname, m)] = {k: med([r[k] for r in rs]) for k in ("wall", "cpu", "loop", "rss_kb", "size",
                                                                 "events", "calls")}
            probs = sorted({p for ps in checks[wname][m] for p in ps})
            S[(wname, m)]["check"] = probs
            S[(wname, m)]["n"] = len(rs)
    wl_names = [w[0] for w in workloads if (w[0], "plain") in S]

    def rel(w, m, k):
        a, b = S.get((w, m)), S.get((w, "plain"))
        return ratio(a[k], b[k]) if a and b else None

    def per_call_ns(m):
        a, b = S.get(("calls_only", m)), S.get(("calls_only", "plain"))
        if not a or not b or a["loop"] is None or b["loop"] is None or not b["calls"]:
            return None
        return (a["loop"] - b["loop"]) / b["calls"] * 1e9

    # ---- report ----
    md = ["# Python workloads: tracker vs memray vs plain", ""]
    md.append(f"{datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}; medians of {args.runs} interleaved "
              "run(s); generated by `bench/run_python_bench.py`. Workloads from `bench/workloads/` (the first five are `../shared/workloads/`); "
              "memray and heaptrack reference figures in `../shared/reference/memray-baseline.md`.")
    md.append("")
    md += env_info(tracker, python, args.memray_path and os.path.abspath(args.memray_path),
                   memray_version, numpy_version, load_start)
    md.append("")
    md.append("Commands (`$P` = python, `$T` = tracker; captures are written to a scratch dir):")
    md.append("```")
    tr_py = "--python $P " if tracker_python_flag else ""
    tr_tail = "-- script.py" if tracker_python_flag else "-- $P script.py"
    for mname, tool, flags in modes:
        fl = " ".join(flags) + (" " if flags else "")
        if tool == "plain":
            line = "$P script.py"
        elif tool == "tracker":
            line = f"$T run -q -f -o X.bin {tr_py}{fl}{tr_tail}"
        else:
            line = f"PYTHONPATH=<memray> $P -m memray run -q -f {fl}-o X.bin script.py"
        md.append(f"{mname:42s} {line}")
    md.append("```")
    if notes:
        md.append("")
        md += [f"- {n}" for n in notes]
    md.append("")
    md.append("## 1. Overhead")
    md.append("")
    md.append("| workload | mode | wall s | ×plain | CPU s | ×plain | loop s | ×plain | max RSS MB "
              "| capture MB | events | ns/call | capture check |")
    md.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for w in wl_names:
        for m in mode_names:
            s = S.get((w, m))
            if not s:
                md.append(f"| {w} | {m} | failed | | | | | | | | | | |")
                continue
            tool = next(t for n, t, _ in modes if n == m)
            check = ("-" if tool != "tracker" else
                     ("ok" if not s["check"] else "**WARNING: " + "; ".join(s["check"]) + "**"))
            ns = per_call_ns(m) if w == "calls_only" and m != "plain" else None
            md.append(
                f"| {w} | {m} | {fmt(s['wall'], '.3f')} | {fmt(rel(w, m, 'wall'), '.2f')} "
                f"| {fmt(s['cpu'], '.3f')} | {fmt(rel(w, m, 'cpu'), '.2f')} "
                f"| {fmt(s['loop'], '.3f')} | {fmt(rel(w, m, 'loop'), '.2f')} "
                f"| {fmt(s['rss_kb'] / 1024, '.1f')} | {fmt(s['size'] and s['size'] / 1e6, '.2f')} "
                f"| {fmt(s['events'], '.0f')} | {fmt(ns, '.0f')} | {check} |")
    md.append("")
    md.append("×plain is the mode's median over plain's median of the same workload. ns/call: "
              "(loop − plain loop) / calls on calls_only. events: allocations + frees (+ Python "
              "events) in the tracker's capture(s) per `tracker stats --json`. capture check: "
              "`" + "`, `".join(CAPTURE_BAD_KEYS) + "` all zero/false in every run.")

    # ---- what the numbers say ----
    md.append("")
    md.append("## 2. What the numbers say")
    md.append("")
    say = []
    tr_modes = [m for m, t, _ in modes if t == "tracker"]
    mr_modes = [m for m, t, _ in modes if t == "memray"]
    load_w = [w for w in wl_names if w != "empty"]
    if ("empty", "plain") in S and len(mode_names) > 1:
        base = S[("empty", "plain")]["wall"]
        parts = [f"{m} +{S[('empty', m)]['wall'] - base:.3f} s / +{(S[('empty', m)]['rss_kb'] - S[('empty', 'plain')]['rss_kb']) / 1024:.1f} MB"
                 for m in mode_names[1:] if ("empty", m) in S]
        say.append(f"- **Start-up** (empty script, plain {base:.3f} s): " + "; ".join(parts) + ".")
    # tracker vs memray, mode pairs that do comparable work
    pairs = [("tracker", "memray"), ("tracker --python-only", "memray"),
             ("tracker --python-allocators", "memray --trace-python-allocators"),
             ("tracker --python-only --python-allocators", "memray --trace-python-allocators")]
    for t, mr in pairs:
        if t not in mode_names or mr not in mode_names:
            continue
        rows, worse = [], []
        for w in load_w:
            a, b = rel(w, t, "wall"), rel(w, mr, "wall")
            if a is None or b is None:
                continue
            ca, cb = rel(w, t, "cpu"), rel(w, mr, "cpu")
            rows.append(f"{w} {a:.2f}× vs {b:.2f}× (CPU {fmt(ca, '.2f')}× vs {fmt(cb, '.2f')}×)")
            if a >= b:
                worse.append(w)
        if rows:
            verdict = ("below memray on every workload" if not worse
                       else "NOT below memray on " + ", ".join(worse))
            say.append(f"- **`{t}` vs `{mr}`** (wall ×plain, CPU ×plain in brackets): " + "; ".join(rows)
                       + f": {verdict}.")
    for t, mr in pairs:
        if t not in mode_names or mr not in mode_names:
            continue
        rows = []
        for w in load_w:
            a, b = rel(w, t, "loop"), rel(w, mr, "loop")
            if a is not None and b is not None:
                rows.append(f"{w} {a:.2f}× vs {b:.2f}×")
        if rows:
            say.append(f"- loop time ×plain, `{t}` vs `{mr}`: " + "; ".join(rows) + ".")
    ns = [(m, per_call_ns(m)) for m in mode_names[1:] if per_call_ns(m) is not None]
    if ns:
        nsd = dict(ns)
        verdicts = []
        for t, mr in pairs:
            if t in nsd and mr in nsd:
                verdicts.append(f"`{t}` {nsd[t]:.0f} ns vs `{mr}` {nsd[mr]:.0f} ns: "
                                + ("below" if nsd[t] < nsd[mr] else "NOT below"))
        say.append("- **Per-call hook cost** on calls_only ((loop − plain loop) / calls; goal: well under "
                   "memray's ~110 ns of the baseline): " + "; ".join(f"{m} {v:.0f} ns" for m, v in ns) + "."
                   + (" " + "; ".join(verdicts) + "." if verdicts else "")
                   + " The --python-allocators figures include recording calls_only's pymalloc ints "
                   "(about 1 object per call), not only the call hook.")
    cap_rows = []
    for w in load_w:
        for t, mr in pairs[:1] + pairs[2:3]:
            a, b = S.get((w, t)), S.get((w, mr))
            if a and b and a["size"] and b["size"]:
                cap_rows.append(f"{w} `{t}` {a['size'] / 1e6:.2f} MB vs `{mr}` {b['size'] / 1e6:.2f} MB")
    if cap_rows:
        say.append("- **Capture size**: " + "; ".join(cap_rows) + ".")
    rss_rows = []
    for w in load_w:
        p = S.get((w, "plain"))
        for m in ("tracker", "memray"):
            s = S.get((w, m))
            if p and s:
                rss_rows.append(f"{w} {m} +{(s['rss_kb'] - p['rss_kb']) / 1024:.1f}")
    if rss_rows:
        say.append("- **Extra max RSS over plain** (MB): " + "; ".join(rss_rows) + ".")
    bad = [(w, m, S[(w, m)]["check"]) for w in wl_names for m in tr_modes if (w, m) in S and S[(w, m)]["check"]]
    if tr_modes:
        if bad:
            say.append("- **Capture check FAILED**: " + "; ".join(f"{w} / {m}: {', '.join(c)}" for w, m, c in bad)
                       + ".")
        else:
            nrun = sum(S[(w, m)]["n"] for w in wl_names for m in tr_modes if (w, m) in S)
            say.append(f"- **Capture check**: all {nrun} tracker captures read back with no lost events, "
                       "no truncation and no checksum or stream errors.")
    if not say:
        say.append("- (nothing to compare: only plain was run)")
    md += say
    if failed:
        md.append("")
        md.append("Failures:")
        md.append("")
        for (w, m), msg in failed.items():
            md.append(f"- {w} / {m}: " + msg.replace("\n", "\n  "))
    md.append("")
    md.append("<details><summary>raw runs</summary>")
    md.append("")
    md.append("```")
    md.append("run,workload,mode,wall_s,cpu_s,loop_s,max_rss_kb,capture_bytes,events")
    md += raw
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
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"modes": mode_names, "workloads": wl_names, "runs": args.runs,
                       "memray": memray_version,
                       "medians": [dict(s, workload=w, mode=m) for (w, m), s in S.items()],
                       "failed": [f"{w} / {m}: {msg}" for (w, m), msg in failed.items()]}, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
