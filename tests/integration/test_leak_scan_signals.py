#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_leak_scan_signals.py - the exit-time leak scan (issue 11) stops the
program's threads with a real-time signal; where that meets the program's
own signal handling. progs/leak_sigwait.c blocks every signal in every
thread and has a thread waiting for all of them with sigwaitinfo: the scan
must not send it a signal it would take as the program's (it must read that
thread's registers another way), and the classes must stay exact."""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import check, eq, main  # noqa: E402


def classes(env, out):
    cp = env.run_raw([env.tracker, "leaks", "--json", "--no-progress", "--kinds", "all",
                      "-n", "0", out], timeout=120)
    eq(cp.returncode, 0, "leaks exit status (%s)" % cp.stderr.decode(errors="replace"))
    got = {}
    for e in json.loads(cp.stdout.decode()):
        if e.get("stack") and "class" in e:
            got[e["stack"][0]["function"]] = (e["class"], e["bytes"], e["count"])
    return got


def test_sigwait_thread_gets_no_signal(env):
    """The waiting thread receives nothing from the tracker; its stack's
    block is still reachable, main's lost block definitely lost."""
    _, out, vals = env.run([env.prog("leak_sigwait")], timeout=60)
    eq(vals.get("ready"), 1, "the program ran")
    eq(vals.get("spurious"), None, "a signal the program's sigwaitinfo thread received")
    got = classes(env, out)
    eq(got.get("kept_by_waiter"), ("reachable", 1111, 1), "the waiter's block")
    eq(got.get("lost_by_main"), ("definite", 2222, 1), "main's lost block")


if __name__ == "__main__":
    sys.exit(main(globals()))
