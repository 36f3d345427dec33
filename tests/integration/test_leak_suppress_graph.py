#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_leak_suppress_graph.py - suppressions follow the leak graph (issue 11).

progs/leak_sup_graph.c loses a tree: a root of 5001 bytes allocated in
sgr_root_alloc (definitely lost) holding the only pointers to two children
of 5002 bytes allocated in sgc_child_alloc (indirectly lost), each called
from main, so no child's stack names the root's function.

LeakSanitizer's semantics (lsan_common.cpp: a suppressed leak's chunks are
marked ignored, then everything reachable from them is reachable): a
suppression of the root's stack hides the root AND the children; a
suppression of the children's stacks hides only the children (the root is
still definitely lost, and no longer leads them). --fail-on-leak judges
what is left."""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import check, eq, eq_all, main  # noqa: E402

ROOT, CHILD = 5001, 5002


def tracker(env, args, expect_rc=0):
    cp = env.run_raw([env.tracker] + list(args), timeout=120)
    if expect_rc is not None and cp.returncode != expect_rc:
        raise AssertionError("%s\n  exit status %d, expected %d\n  stderr: %s\n%s"
                             % (" ".join(args), cp.returncode, expect_rc,
                                cp.stderr.decode(errors="replace").strip(),
                                cp.stdout.decode(errors="replace")[-3000:]))
    return cp


def capture(env):
    _, out, _ = env.run([env.prog("leak_sup_graph")])
    return out


def sup_file(env, pattern):
    path = os.path.join(env.tmpdir("sup"), "sup.txt")
    with open(path, "w") as f:
        f.write("# test_leak_suppress_graph\nleak:%s\n" % pattern)
    return path


def leaks(env, out, extra, expect_rc=0):
    """(JSON entries, text) of `tracker leaks` with extra options."""
    base = ["leaks", "--no-progress", "-n", "0", "--no-default-suppressions"] + extra
    entries = json.loads(tracker(env, base + ["--json", out], expect_rc).stdout.decode())
    text = tracker(env, base + [out], expect_rc).stdout.decode()
    return entries, text


def summary(entries):
    s = [e["leak_summary"] for e in entries if "leak_summary" in e]
    eq(len(s), 1, "leak_summary entries")
    return s[0]


def lost(s, cls):
    return (s[cls]["bytes"], s[cls]["count"])


def by_function(entries):
    return {e["stack"][0]["function"]: e for e in entries
            if e.get("stack") and e["stack"][0]["function"] in ("sgr_root_alloc",
                                                                 "sgc_child_alloc")}


def test_tree_unsuppressed(env):
    out = capture(env)
    entries, text = leaks(env, out, [])
    s = summary(entries)
    eq_all([(lost(s, "definite"), (ROOT, 1), "definitely lost"),
            (lost(s, "indirect"), (2 * CHILD, 2), "indirectly lost")])
    f = by_function(entries)
    eq(f["sgr_root_alloc"].get("indirect_bytes"), 2 * CHILD, "the root leads the children")
    check("15,005 (5,001 direct, 10,004 indirect) bytes in 1 block definitely lost" in text,
          "valgrind's heading:\n" + text)
    tracker(env, ["leaks", "--no-progress", "--fail-on-leak", out], 1)


def test_root_suppression_hides_the_tree(env):
    out = capture(env)
    sup = sup_file(env, "sgr_root_alloc")
    entries, text = leaks(env, out, ["--suppressions", sup])
    s = summary(entries)
    eq_all([(lost(s, "definite"), (0, 0), "definitely lost"),
            (lost(s, "indirect"), (0, 0), "indirectly lost"),
            ((s["suppressed"]["bytes"], s["suppressed"]["count"], s["suppressed"]["stacks"]),
             (ROOT + 2 * CHILD, 3, 2), "suppressed: the root and its children"),
            ((s["suppressed"]["through_leader_bytes"], s["suppressed"]["through_leader_count"]),
             (2 * CHILD, 2), "suppressed through their leader")])
    eq(by_function(entries), {}, "nothing of the tree listed")
    for line in ("definitely lost: 0 bytes in 0 blocks",
                 "indirectly lost: 0 bytes in 0 blocks",
                 "suppressed: 15,005 bytes in 3 blocks from 2 stacks",
                 "(10,004 bytes in 2 blocks of it indirectly lost only through a suppressed "
                 "block)"):
        check(line in text, "%r in:\n%s" % (line, text))
    check(any(ln.split()[:3] == ["2", "15,005", "leak:sgr_root_alloc"]
              for ln in text.splitlines()), "the pattern's use counts the tree:\n" + text)
    # The gate follows, with the default suppressions too.
    tracker(env, ["leaks", "--no-progress", "--fail-on-leak", "--suppressions", sup, out], 0)
    tracker(env, ["leaks", "--no-progress", "--no-default-suppressions", "--fail-on-leak",
                  "--suppressions", sup, out], 0)


def test_child_suppression_hides_only_the_children(env):
    out = capture(env)
    sup = sup_file(env, "sgc_child_alloc")
    entries, text = leaks(env, out, ["--suppressions", sup], 0)
    s = summary(entries)
    eq_all([(lost(s, "definite"), (ROOT, 1), "definitely lost: the root stays"),
            (lost(s, "indirect"), (0, 0), "indirectly lost"),
            ((s["suppressed"]["bytes"], s["suppressed"]["count"]), (2 * CHILD, 2),
             "suppressed: the children"),
            (s["suppressed"]["through_leader_count"], 0, "none through a leader")])
    f = by_function(entries)
    eq(sorted(f), ["sgr_root_alloc"], "only the root listed")
    eq_all([((f["sgr_root_alloc"]["bytes"], f["sgr_root_alloc"]["count"]), (ROOT, 1), "root"),
            (f["sgr_root_alloc"].get("indirect_bytes"), None,
             "the root no longer leads suppressed children")])
    check("5,001 bytes in 1 block definitely lost, allocated at" in text, "heading:\n" + text)
    check("indirect) bytes" not in text, "no hidden indirect bytes in a heading:\n" + text)
    tracker(env, ["leaks", "--no-progress", "--fail-on-leak", "--suppressions", sup, out], 1)
    tracker(env, ["leaks", "--no-progress", "--fail-on-leak=%d" % ROOT, "--suppressions", sup,
                  out], 0)


if __name__ == "__main__":
    sys.exit(main(globals()))
