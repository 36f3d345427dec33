#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_sigkill.py - a process killed by SIGKILL leaves a readable capture
reported as truncated, holding at least every event older than the
writer's wait: one flush interval (10 ms), or up to four for a quiet or
steady program (src/capture/writer.c, QUIET_MAX; README: 20-40 ms), which the
200 ms pause before the kill covers. `tracker run` exits with 128 + 9.
Also: `tracker run`
passes the program's own exit status through, and 128 + N for other
signals."""

import os
import select
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import check, eq, ge, main  # noqa: E402

N = 20000


def test_kills_itself(env):
    prog = env.prog("killself")
    # N allocations, then 200 ms asleep (five times the longest wait of a
    # quiet program's writer), then SIGKILL.
    _, out, _ = env.run([prog, "0", str(N), "200"], expect_rc=128 + signal.SIGKILL)
    st = env.stats(out, allow_truncated=True)
    eq(st["truncated"], True, "truncated")
    ge(st["allocations"], N, "allocations made before the 200 ms pause")
    ge(st["frees"], N // 2, "frees made before the pause")
    ge(st["leaked_allocations"], N // 2, "blocks left live when killed")


def test_killed_from_outside(env):
    prog = env.prog("killself")
    out = env.out_path()
    argv = [env.tracker, "run", "-o", out, "-f", "--", prog, "1"]
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        ready, _, _ = select.select([p.stdout], [], [], 30)
        check(ready, "program did not start within 30 s")
        line = p.stdout.readline().decode()
        check(line.startswith("pid="), "unexpected first line %r" % line)
        pid = int(line[4:])
        time.sleep(0.3)
        os.kill(pid, signal.SIGKILL)
        rc = p.wait(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    eq(rc, 128 + signal.SIGKILL, "tracker run exit status")
    st = env.stats(out, allow_truncated=True)
    eq(st["truncated"], True, "truncated")
    ge(st["allocations"], 1, "allocations recorded in 300 ms")


def test_exit_status_passthrough(env):
    _, out, _ = env.run(["/bin/sh", "-c", "exit 42"], expect_rc=42)
    eq(env.stats(out)["truncated"], False, "capture of a normal exit")
    # SIGTERM's default action: the process dies by the signal, atexit
    # handlers do not run.
    _, out, _ = env.run(["/bin/sh", "-c", "kill -TERM $$"], expect_rc=128 + signal.SIGTERM)
    env.stats(out, allow_truncated=True)


if __name__ == "__main__":
    sys.exit(main(globals()))
