#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_multi.py - reports given several captures of one run (issue 10 §5):
the shell's `tracker summary out.*.bin`, in any order, with or without the
root file, reads exactly as `--all` on the run's root capture; files of two
different runs are refused in one line (exit 2); `stats --all` gives every
capture's figures, headed by its pid."""

import glob
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import check, eq, main  # noqa: E402


def run_tree(env):
    """A forker run: out.bin plus one capture per child; returns (root,
    every capture, the children's pids)."""
    _, out, v = env.run([env.prog("forker"), env.prog("leaker"), "10", "100", "20", "30", "5",
                         "40"])
    files = sorted(glob.glob(os.path.join(os.path.dirname(out), "*.bin")))
    check(len(files) >= 4, "expected the root and three children's captures, found %s" % files)
    pids = [v[k] for k in ("child_exit", "child_uexit", "child_exec")]
    return out, files, pids


def report(env, argv, expect_rc=0):
    cp = env.run_raw([env.tracker] + argv + ["--no-progress"])
    err = cp.stderr.decode(errors="replace")
    eq(cp.returncode, expect_rc, "exit status of %s (stderr: %s)" % (" ".join(argv), err))
    return cp.stdout, err


def test_several_files_are_all(env):
    root, files, _ = run_tree(env)
    others = [f for f in files if f != root]
    for cmd in (["summary"], ["leaks", "--json"], ["tree"], ["summary", "--json"]):
        want, _ = report(env, cmd + ["--all", root])
        check(want, "%s --all printed nothing" % cmd)
        # As the shell expands out.*.bin, reversed, and without the root.
        for operands in (files, list(reversed(files)), others, [root, others[0]]):
            got, _ = report(env, cmd + operands)
            eq(got, want, "%s %s against --all %s" % (" ".join(cmd), " ".join(
                os.path.basename(f) for f in operands), os.path.basename(root)))


def test_different_runs_refused(env):
    root_a, files_a, _ = run_tree(env)
    root_b, files_b, _ = run_tree(env)
    for cmd in ("summary", "leaks", "flamegraph", "stats"):
        out, err = report(env, [cmd, files_a[1], files_b[0]], expect_rc=2)
        eq(out, b"", "%s: nothing on stdout" % cmd)
        eq(err.count("\n"), 1, "%s: one line of error: %r" % (cmd, err))
        check("different runs" in err and files_a[1] in err and files_b[0] in err,
              "%s: the error names both files: %r" % (cmd, err))


def test_stats_all(env):
    root, files, pids = run_tree(env)
    out, _ = report(env, ["stats", "--json", "--all", root])
    doc = json.loads(out)
    procs = doc["processes"]
    eq(sorted(p["path"] for p in procs), files, "stats --all: every capture of the run")
    for p in procs:
        alone = env.stats(p["path"])
        alone.pop("_path", None)
        eq(p["stats"], alone, "stats --all: %s as stats alone" % p["path"])
        eq(p["pid"], alone["pid"], "stats --all: %s pid" % p["path"])
    got = {p["pid"] for p in procs}
    for pid in pids:
        check(pid in got, "stats --all: child pid %d listed (%s)" % (pid, sorted(got)))
    # Several files of the run: the same.
    again, _ = report(env, ["stats", "--json"] + list(reversed(files)))
    eq(json.loads(again), doc, "stats with every file against stats --all")
    text, _ = report(env, ["stats", "--all", root])
    text = text.decode()
    for pid in pids:
        check(("pid %d:" % pid) in text, "stats --all text: a block headed pid %d" % pid)


if __name__ == "__main__":
    sys.exit(main(globals()))
