#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_leak_gate.py - issue 11: a leak gate a CI can trust.

(1) Allocations made before libtracker's constructor runs are recorded
with their stacks: libstdc++'s 72,704-byte emergency exception pool in a
C++ program, and a shared library whose constructor leaks 4,242 bytes
(exact bytes, the constructor's function in the stack). (2) An executable
that defines its own malloc and free runs with its exit status under the
tracker, says so once on stderr, and its reports say its heap was not
seen; the gate refuses to vouch for it. (3) `leaks --fail-on-leak` judges
every capture of the run (a fork child's leak fails it without --all) and
fails on a truncated capture instead of saying "no leaks". (4) The default
suppressions hide libc's and libstdc++'s one-time state, are printed by
--print-suppressions, and are turned off by --no-default-suppressions.
"""

import json
import os
import shutil
import subprocess
import sys

import harness
from harness import check, eq

POOL = 72704       # libstdc++'s emergency EH pool (its default size on 64-bit)
CTOR_LEAK = 4242   # progs/ctor_leak_lib.c


def tracker(env, args, rc=0):
    cp = env.run_raw([env.tracker] + args)
    if rc is not None and cp.returncode != rc:
        raise AssertionError("tracker %s: exit %d, expected %d\n  stdout: %s\n  stderr: %s"
                             % (" ".join(args), cp.returncode, rc,
                                cp.stdout.decode(errors="replace")[-3000:],
                                cp.stderr.decode(errors="replace").strip()))
    return cp


def leaks_json(env, out, *extra):
    # Every class: these tests are about what was recorded, not its class.
    cp = tracker(env, ["leaks", "--no-progress", "--json", "-n", "0", "--show-reachable",
                       "--no-default-suppressions"] + list(extra) + [out])
    return json.loads(cp.stdout.decode())


def funcs(entry):
    return [f.get("function", "") for f in entry.get("stack", [])]


# ---- (1) before the constructor -------------------------------------------

def test_ctor_leak_recorded(env):
    """A library constructor's 4,242-byte leak, made before ours ran, is in
    the capture with its stack; nothing was counted lost."""
    _, out, _ = env.run([env.prog("ctor_leak")])
    st = env.stats(out)
    eq(st["lost_events"], 0, "lost events")
    hits = [e for e in leaks_json(env, out) if e["bytes"] == CTOR_LEAK]
    eq(len(hits), 1, "one 4,242-byte leak group (%r)" % hits)
    eq(hits[0]["count"], 1, "blocks in it")
    f = funcs(hits[0])
    check("ctor_leak_alloc" in f and "ctor_leak_init" in f,
          "the constructor's frames in the stack: %r" % f)


def test_cxx_emergency_pool(env):
    """libstdc++ allocates its emergency pool in its own initialiser, before
    ours: 72,704 bytes, with libstdc++ in the stack."""
    _, out, _ = env.run([env.prog("cxx_globals")])
    hits = [e for e in leaks_json(env, out) if e["bytes"] == POOL]
    eq(len(hits), 1, "one 72,704-byte group (%r)" % [(e["bytes"], funcs(e)[:3]) for e in
                                                      leaks_json(env, out)])
    mods = [os.path.basename(f.get("module", "")) for f in hits[0]["stack"]]
    check(any(m.startswith("libstdc++") for m in mods), "libstdc++ in the stack: %r" % mods)
    check(len(mods) >= 2, "a stack, not a lone frame: %r" % mods)


# ---- (2) the program's own malloc -----------------------------------------

def test_own_malloc_runs(env):
    """The executable's malloc/free: exit 0, one line on stderr, the report
    says the heap was not seen, and the gate does not pass."""
    plain = env.run_raw([env.prog("own_malloc"), "10", "100"])
    eq(plain.returncode, 0, "the program alone")
    cp, out, values = env.run([env.prog("own_malloc"), "10", "100"])
    eq(values.get("ok"), 1, "the program ran to its end")
    lines = [l for l in cp.stderr.decode().splitlines() if "defines malloc" in l]
    eq(len(lines), 1, "one line about its malloc (stderr %r)" % cp.stderr.decode())
    text = tracker(env, ["leaks", "--no-progress", out]).stdout.decode()
    check("its own malloc" in text and "not seen" in text, "leaks says so: %r" % text)
    check("no leaks" not in text, "leaks does not say 'no leaks': %r" % text)
    summ = tracker(env, ["summary", "--no-progress", out]).stdout.decode()
    check("not seen" in summ, "summary says so: %r" % summ)
    eq(env.stats(out).get("heap_unseen"), True, "stats --json heap_unseen")
    text = tracker(env, ["stats", out]).stdout.decode()
    check("not seen" in text, "stats says so: %r" % text)
    gate = tracker(env, ["leaks", "--no-progress", "--fail-on-leak", out], 1)
    err = gate.stderr.decode()
    check("malloc" in err and len(err.strip().splitlines()) == 1, "one-line reason: %r" % err)


def test_nopie_malloc_stub_is_not_own_malloc(env):
    """A non-PIE executable that takes malloc's address exports a PLT stub
    named malloc (Debian's python3.11 does): not a malloc of its own, no
    warning, and its 3 blocks of 100 bytes are seen."""
    cp, out, _ = env.run([env.prog("nopie_malloc"), "3", "100"])
    check("defines malloc" not in cp.stderr.decode(), "no warning: %r" % cp.stderr.decode())
    st = env.stats(out)
    eq(st.get("heap_unseen"), None, "no heap_unseen")
    eq(st["leaked_bytes"], 300, "its leaks seen")
    cp = tracker(env, ["leaks", "--no-progress", "--fail-on-leak", out], 1)
    check("300 bytes leaked in 3 blocks" in cp.stderr.decode(), "gate: %r" % cp.stderr.decode())


# ---- (3) the gate judges the run ------------------------------------------

def test_gate_fork_child(env):
    """The parent frees everything; its fork child leaks 3 x 1,000 bytes:
    the gate fails on the run's file alone, and passes with no child leak.
    Every class counts here: sink() keeps the last block reachable from a
    global, and this test is about whose capture is judged."""
    _, out, _ = env.run([env.prog("fork_leak"), "3", "1000"])
    cp = tracker(env, ["leaks", "--no-progress", "--fail-on-leak",
                       "--fail-on-kinds", "definite,indirect,possible,reachable", out], 1)
    check("3000 bytes leaked in 3 blocks" in cp.stderr.decode(),
          "message: %r" % cp.stderr.decode())
    _, out0, _ = env.run([env.prog("fork_leak"), "0", "1000"])
    tracker(env, ["leaks", "--no-progress", "--fail-on-leak", out0], 0)


def test_gate_truncated(env):
    """A capture cut after its header proves nothing: the gate fails with
    one line naming the file, where the report alone says no leaks."""
    _, out, _ = env.run([env.prog("leaker"), "0", "1"])
    tracker(env, ["leaks", "--no-progress", "--fail-on-leak", out], 0)
    cut = os.path.join(os.path.dirname(out), "cut.bin")
    with open(out, "rb") as f:
        data = f.read()
    hlen = int.from_bytes(data[12:16], "little")
    with open(cut, "wb") as f:
        f.write(data[:hlen])
    cp = tracker(env, ["leaks", "--no-progress", "--fail-on-leak", cut], 1)
    err = cp.stderr.decode().strip()
    check("truncated" in err and "cut.bin" in err and len(err.splitlines()) == 1,
          "one line naming the truncated capture: %r" % err)


def test_gate_killed(env):
    """A program killed by SIGKILL: its capture has no end, the gate fails."""
    _, out, _ = env.run([env.prog("killself"), "0", "10", "0"], expect_rc=None)
    cp = tracker(env, ["leaks", "--no-progress", "--fail-on-leak", out], 1)
    check("truncated" in cp.stderr.decode(), "message: %r" % cp.stderr.decode())


# ---- (4) default suppressions ---------------------------------------------

def test_print_suppressions(env):
    """One table, no FILE needed: stdio buffers, locale data, the loader
    and libstdc++'s pool among the defaults."""
    cp = tracker(env, ["leaks", "--print-suppressions"])
    lines = [l.strip() for l in cp.stdout.decode().splitlines() if l.strip().startswith("leak:")]
    check(len(lines) >= 10, "the default set: %r" % cp.stdout.decode())
    for want in ("leak:_IO_file_doallocate", "leak:setlocale", "leak:^ld-linux",
                 "leak:^libstdc++.so"):
        check(any(l.split()[0] == want for l in lines), "%s in %r" % (want, lines))
    check(any("emergency" in l for l in lines), "the pool named: %r" % lines)


def test_defaults_hide_one_time_state(env):
    """The C++ program with static strings and std::cout, and a C program
    that prints through stdio: nothing left once libc's and libstdc++'s
    one-time state is suppressed, so the gate passes; the pool is still
    there without the defaults."""
    _, out, _ = env.run([env.prog("cxx_globals")])
    # Every class: the one-time state is still reachable, and the defaults
    # must hide it whatever the gate counts.
    kinds = ["--fail-on-kinds", "definite,indirect,possible,reachable"]
    tracker(env, ["leaks", "--no-progress", "--fail-on-leak"] + kinds + [out], 0)
    text = tracker(env, ["leaks", "--no-progress", "--show-reachable", out]).stdout.decode()
    check("suppressed" in text and "default" in text, "says what the defaults hid: %r" % text)
    tracker(env, ["leaks", "--no-progress", "--no-default-suppressions", "--fail-on-leak"] +
            kinds + [out], 1)


def test_defaults_keep_real_leaks(env):
    """The constructor's leak is the library's own, not libc's: the
    defaults leave it, and the gate fails on it."""
    _, out, _ = env.run([env.prog("ctor_leak")])
    cp = tracker(env, ["leaks", "--no-progress", "--fail-on-leak", out], 1)
    check("4242 bytes leaked in 1 block" in cp.stderr.decode(), "message: %r" % cp.stderr.decode())


if __name__ == "__main__":
    sys.exit(harness.main(globals()))
