#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_fds.py - the program's descriptors are the program's (issue 14,
items 6 and 7). The tracker's own descriptors (capture, /proc/self/statm,
libunwind's pipe pair) must never sit where the program expects a free
number, must survive the program closing or replacing "all" of its fds,
and no tracker thread may open or close a descriptor while the program
runs (bash closes some fds twice: a background open in between gave bash's
second close the tracker's file, and the tracker then closed bash's pipe)."""

import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Skip, check, diff, eq, main  # noqa: E402

N = 3000


def expected_lines(n):
    return "".join("line %d\n" % i for i in range(n))


def run_mode(env, mode, want_fd):
    """Runs fdprog MODE plain and tracked (N and 0 blocks): the data file must
    be the program's alone, at the number plain gets, and the capture
    complete with exactly the program's N blocks."""
    prog = env.prog("fdprog")
    d = env.tmpdir(mode)
    plain = os.path.join(d, "plain.txt")
    cp = env.run_raw([prog, mode, plain, str(N)], timeout=60)
    eq(cp.returncode, 0, "plain exit status")
    eq(cp.stdout.decode().strip(), "fd=%d" % want_fd, "plain data file descriptor")
    data = os.path.join(d, "data.txt")
    _, out, v = env.run([prog, mode, data, str(N)], timeout=60)
    with open(data, "rb") as f:
        got = f.read()
    check(got == expected_lines(N).encode(),
          "data file holds only the program's lines (%d bytes, expected %d; starts %r)"
          % (len(got), len(expected_lines(N)), got[:40]))
    eq(v.get("fd"), want_fd, "tracked data file descriptor")
    s = env.stats(out)
    s0, _ = env.traced([prog, mode, os.path.join(d, "data0.txt"), "0"], timeout=60)
    eq(diff(s, s0, "allocations"), N, "allocations difference")
    eq(diff(s, s0, "frees"), N, "frees difference")
    eq(diff(s, s0, "bytes_allocated"), N * 1000, "bytes_allocated difference")
    eq(s["unmatched_frees"], 0, "unmatched_frees")


def test_lowest_fd_is_free(env):
    """A program's first open gets 3, as plain (the capture used to be 3)."""
    run_mode(env, "open", 3)


def test_close_range_all(env):
    """close_range(3, ~0U, 0) then open: the data file gets 3 and only the
    program's data; the capture stays complete."""
    run_mode(env, "close_range", 3)


def test_closefrom(env):
    run_mode(env, "closefrom", 3)


def test_dup2_over_all(env):
    """/dev/null dup2'd over 3..63: the capture must not go to /dev/null."""
    run_mode(env, "dup2", 64)


def test_dup3_over_all(env):
    run_mode(env, "dup3", 64)


def test_no_background_open_close(env):
    """While the program runs, no tracker thread opens or closes anything: a
    program that opens, closes and closes again for 3 s always gets the
    lowest free number, and its second close never closes someone else's
    file. (The sampler probed for libcuda with dlopen(RTLD_NOLOAD) ten times
    a second, which opens and closes /etc/ld.so.cache.)"""
    prog = env.prog("fdprog")
    plain = env.run_raw([prog, "churn", "-", "300"], timeout=60)
    eq(plain.returncode, 0, "plain exit status")
    _, _, v = env.run([prog, "churn", "-", "3000"], timeout=60)
    check(v.get("rounds", 0) > 0, "the program ran")
    eq((v.get("foreign"), v.get("stolen")), (0, 0),
       "(open got another number, second close closed something) in %d rounds" % v["rounds"])


def test_probes_see_nothing(env):
    """fstat, fcntl(F_GETFD) and dup over 3..soft limit find no descriptor
    of the tracker's (CPython's test_pass_fds_redirected lists a child's
    open fds this way), with the usual limit and with one lowered to 40,
    where the tracker's cannot sit above the program's range."""
    prog = env.prog("fdprog")
    _, _, v = env.run([prog, "probe", "-", "0"], timeout=60)
    eq(v.get("open"), 0, "descriptors answering as open (last %r)" % v.get("open_fd"))
    _, _, v = env.run([bash(), "-c", 'ulimit -n 40 && exec "$0" probe - 0', prog], timeout=60)
    eq(v.get("open"), 0, "descriptors answering as open under ulimit -n 40 (last %r)"
       % v.get("open_fd"))


FD_CALLS = ("open", "openat", "openat2", "close", "close_range", "pipe", "pipe2", "dup",
            "dup2", "dup3", "fcntl", "socket", "accept", "accept4", "eventfd2", "memfd_create")


def off_main_fd_calls(env, argv, extra_env=()):
    """Runs argv traced under strace; returns the descriptor system calls
    made by threads other than the main one."""
    strace = shutil.which("strace")
    if not strace:
        raise Skip("strace not installed")
    d = env.tmpdir("strace")
    log = os.path.join(d, "strace.log")
    envs = ["LD_PRELOAD=" + env.preload, "TRACKER_OUTPUT=" + os.path.join(d, "out.bin")]
    envs += list(extra_env)
    cp = env.run_raw([strace, "-f", "-qq", "-o", log, "-e", "trace=" + ",".join(FD_CALLS)]
                     + [a for e in envs for a in ("-E", e)] + list(argv), timeout=120)
    if cp.returncode != 0 and b"ptrace" in cp.stderr:
        raise Skip("strace cannot trace here: %s" % cp.stderr.decode(errors="replace")[:200])
    eq(cp.returncode, 0, "exit status under strace")
    with open(log) as f:
        lines = [ln for ln in f.read().splitlines() if ln.strip()]
    main_pid = lines[0].split()[0]
    return [ln for ln in lines if ln.split()[0] != main_pid
            and not ln.split()[1].startswith(("+++", "---", "<..."))]


def test_threads_touch_no_descriptor(env):
    """The same, exactly, by strace: no descriptor system call comes from
    another thread than the main one. The others are the tracker's writer
    and sampler, and 4 threads of the program's that only allocate (the
    tracker read each one's name from /proc/thread-self/comm at its first
    allocation)."""
    others = off_main_fd_calls(env, [env.prog("fdprog"), "churn", "-", "1000"])
    check(not others, "descriptor calls from threads other than the main one:\n  %s"
          % "\n  ".join(others[:10]))


def test_gpu_sampler_opens_nothing(env):
    """A CUDA program (the test doubles of tests/gpu): NVML is loaded on the
    program's thread, not by the sampler (it opened libnvidia-ml.so.1 and
    ld.so.cache from there)."""
    fake = os.path.normpath(os.path.join(env.progdir, "..", "gpu", "fake"))
    prog = os.path.normpath(os.path.join(env.progdir, "..", "gpu", "gpu_driver"))
    if not os.access(prog, os.X_OK) or not os.path.isdir(os.path.join(fake, "nvml")):
        raise Skip("GPU test doubles not built")
    libs = ":".join(os.path.join(fake, n) for n in ("cuda", "nvml"))
    others = off_main_fd_calls(env, [prog, "sleep"], ["LD_LIBRARY_PATH=" + libs])
    check(not others, "descriptor calls from the tracker's threads:\n  %s"
          % "\n  ".join(others[:10]))


def test_dup2_over_the_top(env):
    """dup2 over the top 64 numbers below the soft limit, where the tracker
    keeps its own: they move out of the way (libunwind's copy of its pipe
    numbers included) and the capture stays complete."""
    run_mode(env, "dup2_top", 3)


def test_dup2_over_everything(env):
    """dup2 over every number up to the soft limit leaves the tracker no
    descriptor: it stops, says so once, the capture reads as truncated, and
    the program's files hold only the program's data."""
    prog = env.prog("fdprog")
    d = env.tmpdir("all")
    data = os.path.join(d, "data.txt")
    cp, out, v = env.run([prog, "dup2_all", data, str(N)], timeout=60)
    with open(data, "rb") as f:
        got = f.read()
    check(got == expected_lines(N).encode(),
          "data file holds only the program's lines (%d bytes, expected %d; starts %r)"
          % (len(got), len(expected_lines(N)), got[:40]))
    eq(v.get("fd"), 3, "data file descriptor")
    err = cp.stderr.decode(errors="replace")
    eq(err.count("stopped tracking"), 1, "stop messages in %r" % err[-500:])
    check("descriptor" in err, "the message says why: %r" % err[-300:])
    st = env.stats(out, allow_truncated=True)
    eq(st.get("truncated"), True, "capture truncated")


def bash():
    b = shutil.which("bash")
    if not b:
        raise Skip("bash not found")
    return b


def test_bash_exec_3(env):
    """bash's `exec 3>file` must give the program's file fd 3, not the
    capture: the file holds exactly what the script wrote."""
    d = env.tmpdir("bash3")
    script = ('exec 3>out3.txt; for i in 1 2 3 4 5 6 7 8; do x=$(echo $i | cat); done; '
              'echo done >&3')
    cp, out, _ = env.run([bash(), "-c", "cd %s && %s" % (d, script)], timeout=60)
    with open(os.path.join(d, "out3.txt"), "rb") as f:
        got = f.read()
    check(got == b"done\n", "out3.txt: %d bytes, starts %r, expected b'done\\n'"
          % (len(got), got[:24]))
    st = env.stats(out)
    check(st["allocations"] > 0, "bash's own capture has its allocations")


LOOP = ('n=0; for i in $(seq 150); do x=$(echo "v$i" | tr v w | cat); '
        'n=$((n+1)); echo "$n x=$x"; done')


def test_bash_pipeline_loop(env):
    """150 pipelines with command substitution, 20 runs: byte-identical to
    plain every time. The sampler's periodic dlopen(RTLD_NOLOAD) probe for
    libcuda opened and closed /etc/ld.so.cache ten times a second; against
    bash's double close that closed bash's pipe (1 run in 6 went wrong)."""
    b = bash()
    plain = env.run_raw([b, "-c", LOOP], timeout=60)
    eq(plain.returncode, 0, "plain exit status")
    want = plain.stdout
    check(want.count(b"\n") == 150, "plain output has 150 lines")
    bad = []
    for r in range(20):
        out = os.path.join(env.tmpdir("loop"), "out.bin")
        cp, _, _ = env.run([b, "-c", LOOP], out=out, timeout=120, expect_rc=None)
        if cp.returncode != 0 or cp.stdout != want:
            got = cp.stdout.decode(errors="replace").splitlines()
            diffl = [(i, g) for i, (g, w) in
                     enumerate(zip(got, want.decode().splitlines())) if g != w]
            bad.append("run %d: rc %d, %d lines, first differences %r, stderr %r"
                       % (r, cp.returncode, len(got), diffl[:3], cp.stderr[-300:]))
    check(not bad, "%d of 20 runs differ from plain:\n  %s" % (len(bad), "\n  ".join(bad)))


if __name__ == "__main__":
    sys.exit(main(globals()))
