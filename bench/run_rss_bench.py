#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""run_rss_bench.py - peak RSS (and wall time) of `import torch` and of a
short CPU training run (tests/integration/python/torch_train.py), plain
and under `tracker run` (default hybrid mode, and --python-only), for each
interpreter that can import torch (python3 on PATH, /usr/bin/python3, or
those given with --python). Peak RSS is the traced process's own
(wait4's ru_maxrss over the process tree: the tracker CLI itself is
small); the tracker's own memory as the capture reports it
(`tracker stats --json`, tracker_memory) is printed beside it.
Runs are interleaved; medians of --reps. Not a test: it asserts nothing.

usage: bench/run_rss_bench.py [--tracker build/tracker] [--reps 3]
                              [--python PY ...] [--workloads import,train]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TRAIN = os.path.join(ROOT, "tests", "integration", "python", "torch_train.py")
WORKLOADS = {
    "import": ["-c", "import torch"],
    "train": [TRAIN],
}
CONFIGS = ("plain", "tracked", "python-only")


def run_one(argv, env):
    """(peak RSS bytes of the largest process in the tree, wall s)."""
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError("%s failed: %s" % (" ".join(argv), err.strip()[-500:]))
    return ru.ru_maxrss * 1024, wall


def own_memory(tracker, capture):
    cp = subprocess.run([tracker, "stats", "--json", capture], stdout=subprocess.PIPE,
                        stderr=subprocess.DEVNULL)
    if cp.returncode != 0:
        return None
    return json.loads(cp.stdout.decode()).get("tracker_memory")


def can_import_torch(py):
    try:
        return subprocess.run([py, "-c", "import torch"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=300).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def mib(b):
    return "%.1f" % (b / 1048576.0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tracker", default=os.path.join(ROOT, "build", "tracker"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--python", action="append", default=None)
    ap.add_argument("--workloads", default="import,train")
    a = ap.parse_args()
    pys = a.python or [p for p in (shutil.which("python3"), "/usr/bin/python3") if p]
    pys = list(dict.fromkeys(os.path.realpath(p) if p.startswith("/usr/bin") else p for p in pys))
    pys = [p for p in pys if can_import_torch(p)]
    if not pys:
        print("no interpreter here imports torch; nothing to measure")
        return 0
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
    env = {k: v for k, v in env.items() if not k.startswith("TRACKER_")}
    tmp = tempfile.mkdtemp(prefix="trk-rss-")
    rows = []
    try:
        for py in pys:
            for wl in a.workloads.split(","):
                res = {c: [] for c in CONFIGS}
                own = None
                for rep in range(a.reps):
                    for c in CONFIGS:
                        cap = os.path.join(tmp, "%s.bin" % c)
                        argv = [py] + WORKLOADS[wl]
                        if c != "plain":
                            extra = ["--python-only"] if c == "python-only" else []
                            argv = [a.tracker, "run", "-q", "-f", "-o", cap] + extra + ["--"] + argv
                        res[c].append(run_one(argv, env))
                        if c == "tracked" and rep == 0:
                            own = own_memory(a.tracker, cap)
                med = {c: (statistics.median(r for r, _ in v), statistics.median(w for _, w in v))
                       for c, v in res.items()}
                rows.append((py, wl, med, own))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("| python | workload | plain MiB | tracked MiB | +MiB | python-only MiB | +MiB "
          "| own peak MiB | tables MiB | generations | wall plain s | wall tracked s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for py, wl, m, own in rows:
        p, t, q = m["plain"][0], m["tracked"][0], m["python-only"][0]
        print("| %s | %s | %s | %s | %+.1f | %s | %+.1f | %s | %s | %s | %.2f | %.2f |" % (
            py, wl, mib(p), mib(t), (t - p) / 1048576.0, mib(q), (q - p) / 1048576.0,
            mib(own["peak_bytes"]) if own else "-", mib(own["tables_peak_bytes"]) if own else "-",
            own["table_rotations"] if own else "-", m["plain"][1], m["tracked"][1]))
    print("\nmedians of %d interleaved runs; RSS is the traced process's peak (ru_maxrss); "
          "own peak: the tracker's own mappings as the capture reports them" % a.reps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
