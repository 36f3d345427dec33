#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_fork_exec.py - a traced process tree (progs/forker.c): two forked
children (one leaving through exit(), one through _exit()) and a forked
child that execs another traced program each write <stem>.<pid>.bin beside
the root capture <stem>.bin, with exactly their own allocations (and the
parent's live blocks as inherited ones); the parent's capture holds none of
theirs."""

import glob
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import check, diff, eq, main  # noqa: E402

PN, PS = 100, 1000   # parent
CN, CS = 500, 300    # each forked child
EN, ES = 700, 200    # the exec'd leaker


def captures_of(out, pid):
    """Captures a pid wrote: <stem>.<pid>.bin, then <stem>.<pid>.<n>.bin for
    later images of the same pid (after exec), in image order."""
    stem = out[:-len(".bin")]
    found = []
    for path in glob.glob("%s.%d.bin" % (stem, pid)) + glob.glob("%s.%d.*.bin" % (stem, pid)):
        m = re.fullmatch(re.escape(stem) + r"\.%d(?:\.(\d+))?\.bin" % pid, path)
        if m:
            found.append((int(m.group(1) or 0), path))
    return [p for _, p in sorted(found)]


def run_tree(env, pn, cn, en):
    leaker = env.prog("leaker")
    prog = env.prog("forker")
    _, out, v = env.run([prog, leaker, str(pn), str(PS), str(cn), str(CS), str(en), str(ES)])
    kids = {k: v[k] for k in ("child_exit", "child_uexit", "child_exec")}
    files = {os.path.basename(p) for p in glob.glob(os.path.join(os.path.dirname(out), "*.bin"))}
    check("out.bin" in files, "root capture out.bin missing; found %s" % sorted(files))
    caps = {}
    for k, pid in kids.items():
        c = captures_of(out, pid)
        check(c, "no capture out.%d.bin for %s (pid %d); found %s" % (pid, k, pid, sorted(files)))
        caps[k] = c
    # Every file in the directory belongs to the tree: nothing stray.
    expected = {"out.bin"} | {os.path.basename(p) for c in caps.values() for p in c}
    eq(files, expected, "capture files written")
    return env.stats(out), caps


def test_fork_and_exec(env):
    parent, caps = run_tree(env, PN, CN, EN)
    parent0, caps0 = run_tree(env, 0, 0, 0)

    # The parent: its own PN blocks and nothing of its children's.
    eq(diff(parent, parent0, "allocations"), PN, "parent allocations difference")
    eq(diff(parent, parent0, "leaked_bytes"), PN * PS, "parent leaked_bytes difference")
    eq(diff(parent, parent0, "bytes_allocated"), PN * PS, "parent bytes_allocated difference")

    # Forked children: their own allocations are exact absolutely; the
    # parent's blocks live at the fork are inherited (live, leaked if never
    # freed, never allocations of the child): the parent's PN more than
    # without them.
    for k in ("child_exit", "child_uexit"):
        eq(len(caps[k]), 1, "%s: one capture" % k)
        sts = []
        for n, c in ((CN, caps[k][0]), (0, caps0[k][0])):
            st = env.stats(c)
            sts.append(st)
            eq(st["allocations"], n, "%s (%s): allocations" % (k, c))
            eq(st["leaked_allocations"], n + st["inherited_allocations"],
               "%s (%s): leaked_allocations (own + inherited)" % (k, c))
            eq(st["leaked_bytes"], n * CS + st["inherited_bytes"],
               "%s (%s): leaked_bytes (own + inherited)" % (k, c))
            eq(st["frees"], 0, "%s (%s): frees" % (k, c))
            eq(st["inherited_missing"], False, "%s (%s): inherited_missing" % (k, c))
        eq(diff(sts[0], sts[1], "inherited_allocations"), PN,
           "%s: inherited_allocations difference" % k)
        eq(diff(sts[0], sts[1], "inherited_bytes"), PN * PS, "%s: inherited_bytes difference" % k)

    # The exec'd program: its image is the last capture of that pid (an
    # earlier one, if any, is the forked image before exec, which allocated
    # nothing itself). The difference is exactly the leaker's own: none of
    # the parent's PN blocks, live in the forked image at exec, carry over.
    img = env.stats(caps["child_exec"][-1])
    img0 = env.stats(caps0["child_exec"][-1])
    eq(diff(img, img0, "allocations"), EN, "exec'd leaker allocations difference")
    eq(diff(img, img0, "leaked_bytes"), EN * ES, "exec'd leaker leaked_bytes difference")
    for pre in caps["child_exec"][:-1]:
        st = env.stats(pre)
        eq(st["allocations"], 0, "pre-exec image %s: allocations" % pre)


if __name__ == "__main__":
    sys.exit(main(globals()))
