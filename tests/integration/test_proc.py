#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_proc.py - awkward process shapes (issue 14, items 3, 4, 10, 11, 12
and parts of 17), driven through progs/procs.c: the traced program behaves
as it does plain, and every process that should be recorded is recorded,
exactly once, in a capture that ends with END and nothing after it."""

import glob
import os
import re
import shutil
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import check, diff, eq, kv, main  # noqa: E402

N, S = 300, 40
CHUNK_END = 3


def chunk_types(path):
    """The chunk types of a capture in file order (docs/FORMAT.md §1-2)."""
    with open(path, "rb") as f:
        data = f.read()
    check(len(data) >= 64, "%s: too short for a capture" % path)
    off = struct.unpack_from("<I", data, 12)[0]
    types = []
    while off + 32 <= len(data):
        check(data[off:off + 4] == b"TKCH", "%s: no chunk magic at %d" % (path, off))
        types.append(data[off + 4])
        off += 32 + struct.unpack_from("<I", data, off + 12)[0]
    eq(off, len(data), "%s: chunk stream ends at the end of the file" % path)
    return types


def check_one_end(path):
    """Exactly one END, and it is the last chunk (issue 14 item 12)."""
    t = chunk_types(path)
    eq(t.count(CHUNK_END), 1, "%s: END chunks" % path)
    eq(t[-1], CHUNK_END, "%s: last chunk type (chunks after END: %s)"
       % (path, t[t.index(CHUNK_END) + 1:]))


def captures(d):
    return sorted(glob.glob(os.path.join(d, "**", "*.bin"), recursive=True))


def plain(e, argv, **kw):
    cp = e.run_raw(argv, timeout=60, **kw)
    eq(cp.returncode, 0, "plain %s: exit status (stderr: %s)"
       % (argv[1] if len(argv) > 1 else argv[0], cp.stderr.decode(errors="replace")))
    return cp


def sibling(out, pid):
    """The last capture of pid beside the root capture out."""
    stem = out[:-len(".bin")]
    found = []
    for p in glob.glob("%s.%d.bin" % (stem, pid)) + glob.glob("%s.%d.*.bin" % (stem, pid)):
        m = re.fullmatch(re.escape(stem) + r"\.%d(?:\.(\d+))?\.bin" % pid, p)
        if m:
            found.append((int(m.group(1) or 0), p))
    check(found, "no capture of pid %d beside %s: %s"
          % (pid, out, sorted(os.listdir(os.path.dirname(out)))))
    return sorted(found)[-1][1]


# ---- item 3: hooks on a small stack ---------------------------------------------


def test_spawn_small_stack(env):
    """posix_spawn from a thread with a 32 KiB stack: exits 0 like plain,
    and the spawned leaker is recorded with exactly its allocations."""
    procs, leaker = env.prog("procs"), env.prog("leaker")
    plain(env, [procs, "spawn_small", leaker, str(N), str(S)])
    got = {}
    for n in (N, 0):
        _, out, v = env.run([procs, "spawn_small", leaker, str(n), str(S)], timeout=60)
        got[n] = env.stats(sibling(out, v["child"]))
        check_one_end(out)
    eq(diff(got[N], got[0], "allocations"), N, "spawned leaker allocations difference")
    eq(diff(got[N], got[0], "leaked_bytes"), N * S, "spawned leaker leaked_bytes difference")


def test_exec_small_stack(env):
    """execv from a thread with a 32 KiB stack (the final flush runs there)."""
    procs, leaker = env.prog("procs"), env.prog("leaker")
    plain(env, [procs, "exec_small", leaker, str(N), str(S)])
    got = {}
    for n in (N, 0):
        _, out, v = env.run([procs, "exec_small", leaker, str(n), str(S)], timeout=60)
        check_one_end(out)
        got[n] = env.stats(sibling(out, v["pid"]))
    eq(diff(got[N], got[0], "allocations"), N, "exec'd leaker allocations difference")


def test_dlopen_small_stack(env):
    """dlopen by a bare name from a thread with a 16 or 32 KiB stack, called
    from a program with a RUNPATH (the hook then searches that path list)."""
    procs = env.prog("procs")
    for kib in ("16", "32"):
        plain(env, [procs, "dlopen_small", kib, "libz.so.1"])
        _, out, v = env.run([procs, "dlopen_small", kib, "libz.so.1"], timeout=60)
        eq(v["loaded"], 1, "loaded on a %s KiB stack" % kib)
        check_one_end(out)


# ---- item 4: TRACKER_OUTPUT of any length ------------------------------------------


def test_long_tracker_output(env):
    """A 5000-byte TRACKER_OUTPUT (relative and absolute): one line on
    stderr, the program runs exactly as plain, nothing is written."""
    leaker = env.prog("leaker")
    d = env.tmpdir("longout")
    ref = plain(env, [leaker, "3", "8"], cwd=d)
    for name in ("a" * 5000, os.path.join(d, "b" * 5000)):
        cp = env.run_raw([leaker, "3", "8"], cwd=d, timeout=60,
                         env={"LD_PRELOAD": env.preload, "TRACKER_OUTPUT": name})
        eq(cp.returncode, 0, "exit status with a long TRACKER_OUTPUT")
        eq(sorted(kv(cp.stdout)), sorted(kv(ref.stdout)), "stdout keys as plain")
        lines = cp.stderr.decode(errors="replace").splitlines()
        eq(len(lines), 1, "stderr lines: %r" % lines)
        check(lines[0].startswith("tracker: ") and "TRACKER_OUTPUT" in lines[0],
              "the line names TRACKER_OUTPUT: %r" % lines[0])
        eq(os.listdir(d), [], "files written")


# ---- item 10: raw clone ---------------------------------------------------------------


def test_raw_clone(env):
    """A clone() child without CLONE_VM is a new process: its allocations are
    in a capture of its own, and none in the parent's."""
    procs = env.prog("procs")
    plain(env, [procs, "clone", str(N), str(S)])
    got, parent = {}, {}
    for n in (N, 0):
        cp, out, v = env.run([procs, "clone", str(n), str(S)], timeout=60)
        c = sibling(out, v["child"])
        check_one_end(c)
        got[n], parent[n] = env.stats(c), env.stats(out)
    eq(diff(got[N], got[0], "allocations"), N, "clone child allocations difference")
    eq(diff(got[N], got[0], "leaked_bytes"), N * S, "clone child leaked_bytes difference")
    eq(diff(parent[N], parent[0], "allocations"), 0, "parent allocations difference")


# ---- item 11: a program that removes the preload ----------------------------------


def test_strip_preload_reexec(env):
    """unsetenv("LD_PRELOAD") + execv("/proc/self/exe"): the re-exec'd image
    runs untraced, once, as it does plain; one capture (the first image)."""
    procs = env.prog("procs")
    ref = plain(env, [procs, "strip_reexec"], env={"LD_PRELOAD": ""})
    eq(kv(ref.stdout)["execs"], 0, "plain: no re-exec")
    _, out, v = env.run([procs, "strip_reexec"], timeout=120)
    eq(v["execs"], 1, "re-execs under the tracker")
    eq(captures(os.path.dirname(out)), [out], "captures written")
    check_one_end(out)


def test_rebuilt_env_still_traced(env):
    """A fresh envp (no LD_PRELOAD in it) while the program's own environment
    still has the preload: the exec'd child is traced (README rule), also with
    5000 variables in that envp."""
    procs, leaker = env.prog("procs"), env.prog("leaker")
    for k in (0, 5000):
        got = {}
        for n in (N, 0):
            _, out, v = env.run([procs, "many_env", str(k), leaker, str(n), str(S)], timeout=60)
            check_one_end(out)
            got[n] = env.stats(sibling(out, v["pid"]))
        eq(diff(got[N], got[0], "allocations"), N,
           "exec'd leaker allocations difference (%d variables)" % k)


# ---- item 12: nothing after END ----------------------------------------------------


def test_exec_chain_ends(env):
    """200 re-execs, each image with a thread allocating busily while it
    execs: every capture ends with its one END, none is truncated."""
    procs = env.prog("procs")
    k = 200
    # A 1 ms writer period: the writer cycles often inside the window
    # between END and the kernel's replacing the image.
    _, out, v = env.run([procs, "exec_chain", str(k), "10"], timeout=170,
                        env={"TRACKER_FLUSH_MS": "1"})
    caps = captures(os.path.dirname(out))
    eq(len(caps), k + 1, "captures")
    bad = []
    for c in caps:
        t = chunk_types(c)
        if t.count(CHUNK_END) != 1 or t[-1] != CHUNK_END:
            bad.append(os.path.basename(c))
    eq(bad, [], "captures with chunks after END or without END")
    truncated = [os.path.basename(c) for c in caps
                 if env.stats(c, allow_truncated=True)["truncated"] is not False]
    eq(truncated, [], "captures reported truncated")


def test_exec_fail_continues(env):
    """An exec that fails: the process goes on, its later allocations are in
    the same capture, which ends with exactly one END."""
    procs = env.prog("procs")
    got = {}
    for n in (N, 0):
        _, out, v = env.run([procs, "exec_fail", str(n), str(S)], timeout=60)
        check_one_end(out)
        got[n] = env.stats(out)
    eq(diff(got[N], got[0], "allocations"), N, "allocations after the failed exec")



# ---- item 17: names and paths -------------------------------------------------------


def test_long_program_name(env):
    """`tracker run ./<250-char name>`: the capture name keeps the first 200
    bytes of the program's name, and the program is recorded."""
    leaker = env.prog("leaker")
    d = env.tmpdir("longname")
    name = "p" * 250
    shutil.copy(leaker, os.path.join(d, name))
    got = {}
    for n in (N, 0):
        cp = env.run_raw([env.tracker, "run", "./" + name, str(n), str(S)], cwd=d, timeout=60)
        eq(cp.returncode, 0, "exit status (stderr: %s)" % cp.stderr.decode(errors="replace"))
        cap = "tracker-%s.%d.bin" % ("p" * 200, kv(cp.stdout)["pid"])
        check(os.path.exists(os.path.join(d, cap)), "capture %s: found %s"
              % (cap, [f for f in os.listdir(d) if f.endswith(".bin")]))
        got[n] = env.stats(os.path.join(d, cap))
    eq(diff(got[N], got[0], "allocations"), N, "allocations difference")


def test_relative_output_after_chdir(env):
    """A relative TRACKER_OUTPUT names one place for the whole run: a child
    forked after chdir writes beside the root capture."""
    procs = env.prog("procs")
    d = env.tmpdir("rel")
    os.makedirs(os.path.join(d, "sub"))
    cp = env.run_raw([procs, "chdir_fork", "sub", str(N), str(S)], cwd=d, timeout=60,
                     env={"LD_PRELOAD": env.preload, "TRACKER_OUTPUT": "rel.bin"})
    eq(cp.returncode, 0, "exit status (stderr: %s)" % cp.stderr.decode(errors="replace"))
    child = kv(cp.stdout)["child"]
    eq(captures(d), sorted([os.path.join(d, "rel.bin"), os.path.join(d, "rel.%d.bin" % child)]),
       "captures")
    eq(env.stats(os.path.join(d, "rel.%d.bin" % child))["allocations"], N, "child allocations")


if __name__ == "__main__":
    sys.exit(main(globals()))
