#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_preload_env.py - libtracker.so works without `tracker run`: with
LD_PRELOAD and TRACKER_OUTPUT it writes the named file, and with no
TRACKER_OUTPUT it writes tracker-<prog>.<pid>.bin in the working directory."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import check, diff, eq, main  # noqa: E402

N, S = 250, 48


def preload_run(env, args, cwd, output=None):
    e = {"LD_PRELOAD": env.preload}
    if output:
        e["TRACKER_OUTPUT"] = output
    cp = env.run_raw([env.prog("leaker")] + args, env=e, cwd=cwd, timeout=60)
    eq(cp.returncode, 0, "leaker exit status under LD_PRELOAD (stderr: %s)"
       % cp.stderr.decode(errors="replace").strip())
    pid = int(cp.stdout.decode().split("pid=")[1].split()[0])
    return pid


def test_tracker_output_env(env):
    d = env.tmpdir("env")
    out_n = os.path.join(d, "x.bin")
    out_0 = os.path.join(d, "y.bin")
    preload_run(env, [str(N), str(S), "50"], d, out_n)
    preload_run(env, ["0", str(S)], d, out_0)
    eq(sorted(os.listdir(d)), ["x.bin", "y.bin"], "files written")
    sn, s0 = env.stats(out_n), env.stats(out_0)
    eq(diff(sn, s0, "allocations"), N, "allocations difference")
    eq(diff(sn, s0, "frees"), 50, "frees difference")
    eq(diff(sn, s0, "bytes_allocated"), N * S, "bytes_allocated difference")
    eq(diff(sn, s0, "leaked_bytes"), (N - 50) * S, "leaked_bytes difference")


def test_default_output_name(env):
    d = env.tmpdir("cwd")
    pid_n = preload_run(env, [str(N), str(S)], d)
    pid_0 = preload_run(env, ["0", str(S)], d)
    want = ["tracker-leaker.%d.bin" % pid_n, "tracker-leaker.%d.bin" % pid_0]
    eq(sorted(os.listdir(d)), sorted(want), "files in the working directory")
    sn = env.stats(os.path.join(d, want[0]))
    s0 = env.stats(os.path.join(d, want[1]))
    eq(diff(sn, s0, "allocations"), N, "allocations difference")
    eq(diff(sn, s0, "leaked_bytes"), N * S, "leaked_bytes difference")
    check(sn["threads"] >= 1, "threads")


if __name__ == "__main__":
    sys.exit(main(globals()))
