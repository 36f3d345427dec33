#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_leak_scan_signals.py - where the exit-time leak scan (issue 11)
meets the rest of the process: it stops the program's threads with a
real-time signal, and runs in fork children too. progs/leak_sigwait.c blocks every signal in every
thread and has a thread waiting for all of them with sigwaitinfo: the scan
must not send it a signal it would take as the program's (it must read that
thread's registers another way), and the classes must stay exact.
progs/leak_fork_chain.c: a fork child's block reachable only through a
block the parent allocated before the fork (not in the child's capture).
progs/leak_filemap.c: a file in the page cache mapped private and writable,
of which the scan must read only the page the program wrote."""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import check, eq, main  # noqa: E402


def classes(env, out, extra=()):
    cp = env.run_raw([env.tracker, "leaks", "--json", "--no-progress", "--kinds", "all",
                      "-n", "0"] + list(extra) + [out], timeout=120)
    eq(cp.returncode, 0, "leaks exit status (%s)" % cp.stderr.decode(errors="replace"))
    got = {}
    for e in json.loads(cp.stdout.decode()):
        if e.get("stack") and "class" in e:
            got[e["stack"][0]["function"]] = (e["class"], e["bytes"], e["count"])
    return got


def test_sigwait_thread_gets_no_signal(env, mode=()):
    """The waiting thread receives nothing from the tracker; its stack's
    block is still reachable, main's lost block definitely lost."""
    _, out, vals = env.run([env.prog("leak_sigwait")] + list(mode), timeout=60)
    eq(vals.get("ready"), 1, "the program ran")
    eq(vals.get("spurious"), None, "a signal the program's sigwaitinfo thread received")
    got = classes(env, out)
    eq(got.get("kept_by_waiter"), ("reachable", 1111, 1), "the waiter's block")
    eq(got.get("lost_by_main"), ("definite", 2222, 1), "main's lost block")


def test_signalfd_thread_gets_no_signal(env):
    """The same with a thread reading a signalfd of every signal (blocked
    for good, not in sigwaitinfo)."""
    test_sigwait_thread_gets_no_signal(env, ["signalfd"])


def test_fork_child_block_reached_through_inherited_block(env):
    """The child's 3,333-byte block hangs from the parent's list node (a
    global points at it): still reachable, not lost; the child's own
    4,444-byte leak stays definitely lost; the gate fails on that one only."""
    _, out, vals = env.run([env.prog("leak_fork_chain")], timeout=60)
    eq(vals.get("child_status"), 0, "the child exited 0")
    got = classes(env, out, ["--all"])
    eq(got.get("child_node"), ("reachable", 3333, 1), "the child's linked block")
    eq(got.get("child_lost"), ("definite", 4444, 1), "the child's lost block")
    check(got.get("parent_node", ("reachable",))[0] == "reachable",
          "the parent's node: %r" % (got.get("parent_node"),))


def max_rss_kb(env, argv, extra_env=None):
    """Peak RSS of the largest process of `argv`'s tree, in KiB, through a
    fresh Python whose only children are that tree (RUSAGE_CHILDREN)."""
    code = ("import resource, subprocess, sys\n"
            "r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
            "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    cp = env.run_raw([sys.executable, "-c", code] + argv, env=extra_env, timeout=120)
    rc, kb = cp.stdout.decode().split()
    eq(int(rc), 0, "exit status of %s" % " ".join(argv))
    return int(kb)


def test_file_mapping_cached_pages_not_read(env):
    """A 64 MiB file, all of it in the page cache, mapped private and
    writable: the scan reads the one page the program wrote (its 1111-byte
    block stays reachable through it) and not the file's own pages.
    mincore() calls every cached page resident, and reading them mapped
    them all in: the old scan added 64 MiB to the process's peak RSS at exit
    (135-150 MB on PyTorch 2.11 with CUDA's libraries)."""
    path = os.path.join(env.tmpdir("filemap"), "data")
    out = env.out_path("filemap")
    argv = [env.tracker, "run", "-q", "-f", "-o", out, "--", env.prog("leak_filemap"), path]
    scanned = max_rss_kb(env, argv)
    got = classes(env, out)
    eq(got.get("kept_by_map"), ("reachable", 1111, 1), "the block the mapping's page holds")
    eq(got.get("lost_by_main"), ("definite", 2222, 1), "main's lost block")
    unscanned = max_rss_kb(env, argv, {"TRACKER_LEAK_SCAN": "0"})
    os.unlink(path)
    check(scanned - unscanned < 24 * 1024,
          "the scan added %d KiB of RSS (without it %d KiB); the file is 65,536 KiB"
          % (scanned - unscanned, unscanned))


if __name__ == "__main__":
    sys.exit(main(globals()))
