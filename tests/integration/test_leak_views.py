#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_leak_views.py - `tree --leaks` and `flamegraph --leaks` count what
`tracker leaks` lists (issue 11): in a capture with leak classes at exit,
definitely and indirectly lost blocks by default, `--kinds LIST` as leaks
takes it (`all`: every block still allocated at exit), and they say so;
a capture without classes still shows every block live at its end, and
says that still reachable blocks are in it.

progs/leak_classes.c has exactly known classes (test_leak_classes.py)."""

import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Skip, check, eq, main  # noqa: E402

DEFINITE, INDIRECT = 10015, 12008


def tracker(env, args, expect_rc=0):
    cp = env.run_raw([env.tracker] + list(args), timeout=120)
    if cp.returncode != expect_rc:
        raise AssertionError("%s: exit status %d\n%s" % (" ".join(args), cp.returncode,
                                                         cp.stderr.decode(errors="replace")))
    return cp.stdout.decode()


def classes_capture(env, extra_env=None):
    if os.uname().machine != "x86_64":
        raise Skip("leak_classes' register scenario is x86-64 assembly")
    _, out, _ = env.run([env.prog("leak_classes")], env=extra_env)
    return out


def tree(env, out, *args):
    return json.loads(tracker(env, ["tree", "--leaks", "--json", "--no-progress"] + list(args)
                              + [out]))


def all_classes(env, out):
    lc = env.stats(out)["leak_classes"]
    return sum(v["bytes"] for k, v in lc.items() if isinstance(v, dict))


def test_tree_counts_lost_by_default(env):
    out = classes_capture(env)
    t = tree(env, out)
    eq((t["total_bytes"], t["total_count"], t.get("leak_kinds")),
       (DEFINITE + INDIRECT, 9, "definite,indirect"), "tree --leaks: lost blocks")
    text = tracker(env, ["tree", "--leaks", "--no-progress", out])
    check("lost at exit (definitely and indirectly): 21.5 KiB in 9 allocations" in text,
          "the title says what it counts:\n" + text)
    check("--kinds all counts every block still allocated" in text, "and how to see all")
    everything = tree(env, out, "--kinds", "all")
    eq((everything["total_bytes"], everything["leak_kinds"]), (all_classes(env, out), "all"),
       "tree --leaks --kinds all: every block live at exit")
    eq(tree(env, out, "--kinds", "reachable")["total_bytes"],
       env.stats(out)["leak_classes"]["reachable"]["bytes"], "--kinds reachable")
    tracker(env, ["tree", "--leaks", "--kinds", "bogus", out], 2)


def test_tree_without_classes_says_so(env):
    out = classes_capture(env, {"TRACKER_LEAK_SCAN": "0"})
    t = tree(env, out)
    check("leak_kinds" not in t, "no kinds without classes: %r" % list(t))
    eq(t["total_bytes"], env.stats(out)["leaked_bytes"], "every block live at the end")
    text = tracker(env, ["tree", "--leaks", "--no-progress", out])
    check("leaked (live at the end, still reachable included)" in text, "title:\n" + text)


def page_data(env, out, *args):
    html = os.path.join(env.tmpdir("fg"), "p.html")
    tracker(env, ["flamegraph", "--leaks", "--no-progress", "-o", html] + list(args) + [out])
    with open(html, encoding="utf-8") as f:
        return f.read()


def test_flamegraph_counts_lost_by_default(env):
    out = classes_capture(env)
    page = page_data(env, out)
    check('"leak_kinds":"definite,indirect"' in page, "the page's data names the kinds")
    check("Lost at exit: definitely and indirectly lost" in page, "the page's text says it")
    check('"leak_kinds":"all"' in page_data(env, out, "--kinds", "all"), "--kinds all")
    # The frames drawn: the lost scenarios' functions, not the reachable ones.
    check(re.search(r'"d_leader"', page) and not re.search(r'"r_data"', page),
          "lost functions drawn, reachable ones not")
    check(re.search(r'"r_data"', page_data(env, out, "--kinds", "all")), "all: reachable drawn")
    bare = page_data(env, classes_capture(env, {"TRACKER_LEAK_SCAN": "0"}))
    check('"leak_kinds"' not in bare, "no kinds without classes")


if __name__ == "__main__":
    sys.exit(main(globals()))
