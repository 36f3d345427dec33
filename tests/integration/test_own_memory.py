#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_own_memory.py - issue 12, "Memory" and "Sampler thread": what the
tracker maps for itself in the traced process is bounded and reported
(`tracker stats`, "tracker_memory": the END trailer's figures,
docs/FORMAT.md §2), whatever the number of distinct stacks, threads and
loaded libraries; stacks stay exact when the bounded tables forget and
re-define nodes; and the sampler thread opens no file while the program
idles. progs/own_mem.c makes 2^BITS distinct stacks on each of THREADS
threads after LIBS rounds of dlopen/dlclose."""

import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Skip, check, eq, ge, main  # noqa: E402

KIB = 1024
PAGE = 4096
TABLE_KB = 256  # TRACKER_TABLE_KB for the small-cap runs
DEFAULT_TABLE_KB = 4096  # the table's default (src/common/env_options.h)


def table_bound(kb, tables=1):
    """Two generations of each intern table at the cap, a header page each
    (docs/FORMAT.md §2: at most two generations resident)."""
    return tables * 2 * (kb * KIB + PAGE)


def own_run(env, bits, threads=0, libs=0, table_kb=TABLE_KB):
    prog = env.prog("own_mem")
    extra_env = {"TRACKER_TABLE_KB": str(table_kb)} if table_kb else None
    cp, out, vals = env.run([prog, str(bits), str(threads), str(libs)], env=extra_env,
                            timeout=300)
    eq(vals.get("stacks"), 1 << bits, "own_mem's stacks")
    st = env.stats(out)
    mem = st.get("tracker_memory")
    check(isinstance(mem, dict), "stats has tracker_memory: %r" % (mem,))
    return st, mem, out


def folded_leaf_lines(env, out):
    """The folded export's stacks through step() (the leaks at the peak)."""
    cp = env.run_raw([env.tracker, "export", "--format", "folded", "-o", "-", out], timeout=300)
    eq(cp.returncode, 0, "export exit status (%s)" % cp.stderr.decode(errors="replace"))
    return [ln for ln in cp.stdout.decode().splitlines() if "step" in ln]


def test_tables_bounded_whatever_the_stacks(env):
    """16 times more distinct stacks (and dlopen churn) under a 256 KiB cap:
    the same bound on the tables, which had to start new generations, and
    still exactly one folded stack per path with the exact bytes."""
    bound = table_bound(TABLE_KB)
    small, msmall, _ = own_run(env, 12)
    big, mbig, out = own_run(env, 16, threads=2, libs=20)
    for name, m in (("2^12 stacks", msmall), ("2^16 stacks x 2 threads", mbig)):
        check(m["tables_peak_bytes"] <= bound,
              "%s: tables_peak_bytes %d > %d" % (name, m["tables_peak_bytes"], bound))
        check(m["tables_bytes"] <= m["tables_peak_bytes"], "%s: tables now <= peak" % name)
        eq(m["python_blocks"], 0, "%s: python_blocks in a C program" % name)
    ge(mbig["table_rotations"], 1, "2^16 stacks: generations started at the cap")
    # About 2^18 trie nodes against 2^13 per generation: the ids of
    # forgotten nodes were defined again, and the stacks must not change.
    lines = folded_leaf_lines(env, out)
    eq(len(lines), 1 << 16, "distinct leaking stacks in the folded export")
    eq(len(set(ln.rsplit(" ", 1)[0] for ln in lines)), 1 << 16, "distinct stack texts")
    bad = [ln for ln in lines if not ln.endswith(" %d" % (16 * 2))]
    eq(bad[:3], [], "stacks whose bytes are not 2 threads x 16")
    eq(big["lost_events"], 0, "lost_events")


def test_default_cap(env):
    """Without TRACKER_TABLE_KB the default cap holds."""
    _, m, _ = own_run(env, 16, table_kb=None)
    bound = table_bound(DEFAULT_TABLE_KB)
    check(m["tables_peak_bytes"] <= bound,
          "tables_peak_bytes %d > %d" % (m["tables_peak_bytes"], bound))


def test_per_thread_figures(env):
    """Thread states are counted one per thread that recorded (the main
    thread and the sampler beside the program's), all of one size; the
    writer's buffers do not grow with threads; the peak covers the rest."""
    per = set()
    for threads in (1, 8):
        _, m, _ = own_run(env, 6, threads=threads)
        n = m["thread_states"]
        check(2 <= n <= threads + 2, "%d threads: thread_states %d" % (threads, n))
        eq(m["thread_bytes"] % n, 0, "%d threads: thread_bytes a multiple of states" % threads)
        per.add(m["thread_bytes"] // n)
        # One ring's worth each for the raw, LZ4 and HUF pieces, LZ4's
        # bound and state on top: under four rings (writer.c); and since
        # format 6 one linked-LZ4 encoder per busy stream, at most 16 of
        # 37 pages each (lz_link.c: LZ4's state and 128 KiB of history).
        check(0 < m["writer_bytes"] <= 4 * 512 * KIB + 16 * 37 * 4 * KIB,
              "%d threads: writer_bytes %d" % (threads, m["writer_bytes"]))
        eq(m["total_bytes"], m["tables_bytes"] + m["thread_bytes"] + m["python_bytes"]
           + m["writer_bytes"] + m["unwinder_bytes"] + m["leak_scan_bytes"]
           + m["preinit_bytes"] + m["sample_memo_bytes"], "%d threads: total is the sum of the parts" % threads)
        check(m["total_bytes"] <= m["peak_bytes"], "%d threads: total <= peak" % threads)
    eq(len(per), 1, "bytes per thread state, the same whatever the threads: %r" % sorted(per))
    ge(per.pop(), 512 * KIB, "a state holds its 512 KiB ring")


def test_stats_text_section(env):
    """The text report says it, in one section."""
    _, _, out = own_run(env, 8, threads=1)
    cp = env.run_raw([env.tracker, "stats", out], timeout=120)
    eq(cp.returncode, 0, "stats exit status")
    text = cp.stdout.decode()
    check("Tracker's own memory" in text, "section title in:\n%s" % text)
    for row in ("Peak", "Stack/code tables", "Thread buffers", "Writer buffers"):
        check(re.search(r"^  %s\s" % re.escape(row), text, re.M), "row %r in:\n%s" % (row, text))


PY_MANY_FUNCS = r"""
src = "\n".join("def f%d():\n    return [%d] * 3\n" % (i, i) for i in range(3000))
ns = {}
exec(compile(src, "gen.py", "exec"), ns)
keep = [ns["f%d" % i]() for i in range(3000)]
print("n=%d" % len(keep))
"""


def test_python_tables_bounded(env):
    """A Python process (hybrid stacks): 3000 functions each allocating on
    its own line; both tables (trie and code objects) stay under the cap,
    one Python block for its one thread."""
    out = env.out_path("py")
    cp, out, vals = env.run([sys.executable, "-c", PY_MANY_FUNCS], out=out,
                            env={"TRACKER_TABLE_KB": str(TABLE_KB)}, timeout=300)
    eq(vals.get("n"), 3000, "the script ran")
    m = env.stats(out).get("tracker_memory")
    check(isinstance(m, dict), "tracker_memory: %r" % (m,))
    bound = table_bound(TABLE_KB, tables=2)
    check(m["tables_peak_bytes"] <= bound,
          "tables_peak_bytes %d > %d" % (m["tables_peak_bytes"], bound))
    eq(m["python_blocks"], 1, "python_blocks (one thread ran Python)")


def test_sampler_opens_nothing_while_idle(env):
    """The sampler and writer threads make no openat while the program
    sleeps a second: no dlopen(RTLD_NOLOAD) probing for the GPU driver
    (which searched the library path, ~16 failed openat per probe, 10 per
    second); the driver is looked for only when the loader's count moved."""
    strace = shutil.which("strace")
    if not strace:
        raise Skip("strace not installed")
    prog = env.prog("own_mem")
    d = env.tmpdir("strace")
    log = os.path.join(d, "trace")
    argv = [strace, "-f", "-qq", "-o", log, "-e", "trace=openat,open,clone,clone3,execve",
            env.tracker, "run", "-o", os.path.join(d, "out.bin"), "-f", "--",
            prog, "4", "0", "0", "1000"]
    cp = env.run_raw(argv, timeout=120)
    if cp.returncode != 0 and b"ptrace" in cp.stderr:
        raise Skip("ptrace not permitted: %s" % cp.stderr.decode(errors="replace").strip())
    eq(cp.returncode, 0, "exit status (%s)" % cp.stderr.decode(errors="replace").strip())
    with open(log) as f:
        lines = f.read().splitlines()
    # The traced program is the process that exec'd own_mem; every thread
    # it cloned is the tracker's (own_mem starts none with THREADS 0).
    prog_pid = None
    for ln in lines:
        m = re.match(r"(\d+)\s+execve\(\"[^\"]*own_mem\"", ln)
        if m:
            prog_pid = m.group(1)
    check(prog_pid is not None, "own_mem's execve in the trace")
    ours = set()
    for ln in lines:
        m = re.match(r"(\d+)\s+(?:clone3?\(|<\.\.\. clone3? resumed>).*=\s+(\d+)$", ln)
        if m and m.group(1) == prog_pid:
            ours.add(m.group(2))
    check(len(ours) >= 1, "found the tracker's threads in the trace:\n%s" % "\n".join(lines[-40:]))
    opens = [ln for ln in lines if re.match(r"(\d+)\s+open", ln) and ln.split()[0] in ours]
    eq(opens, [], "files opened by the tracker's threads")


# The own unwinder's rule cache starts at 16 Ki entries of 16 bytes plus a
# header (src/capture/unwind.c) and its module table is two fixed arrays
# (unwind_cfi.c): what a small program maps, whatever it loads.
RULE_CACHE_MIN = 16 * 1024 * 16 + PAGE  # rounded up to whole pages
RULE_CACHE_MAX = 16 * 1024 * 1024 + PAGE
UNWIND_MODULES_MAX = 1024 * KIB  # the module table, a generous bound
PREINIT_LOG = 32 * 1024 * KIB  # src/capture/preinit.c LOG_BYTES


def test_unwinder_counted(env):
    """The own unwinder's rule cache and module table are the tracker's own
    memory: counted when it ran, the same whatever the libraries loaded (the
    module table is fixed, the cache grows with return addresses, not with
    libraries), and 0 with TRACKER_UNWIND=0; part of the total and peak."""
    figures = []
    for libs in (0, 20):
        _, m, _ = own_run(env, 8, libs=libs)
        u = m["unwinder_bytes"]
        check(RULE_CACHE_MIN < u <= RULE_CACHE_MIN + UNWIND_MODULES_MAX,
              "libs=%d: unwinder_bytes %d" % (libs, u))
        check(u <= m["unwinder_peak_bytes"] <= RULE_CACHE_MAX + UNWIND_MODULES_MAX,
              "libs=%d: unwinder_peak_bytes %d" % (libs, m["unwinder_peak_bytes"]))
        check(m["peak_bytes"] >= m["total_bytes"] >= u, "libs=%d: total/peak hold it" % libs)
        figures.append(u)
    eq(figures[0], figures[1], "unwinder_bytes with 0 and 20 rounds of dlopen")
    prog = env.prog("own_mem")
    _, out, _ = env.run([prog, "8"], env={"TRACKER_UNWIND": "0"})
    m = env.stats(out)["tracker_memory"]
    eq(m["unwinder_bytes"], 0, "TRACKER_UNWIND=0: unwinder_bytes")
    eq(m["unwinder_peak_bytes"], 0, "TRACKER_UNWIND=0: unwinder_peak_bytes")


def test_leak_scan_counted(env):
    """The leak scan's working memory at exit (its live table and marks) is
    counted in its peak and given back before the trailer; 0 without the
    scan."""
    _, m, _ = own_run(env, 10)
    check(0 < m["leak_scan_peak_bytes"] <= m["peak_bytes"],
          "leak_scan_peak_bytes %d (peak %d)" % (m["leak_scan_peak_bytes"], m["peak_bytes"]))
    prog = env.prog("own_mem")
    _, out, _ = env.run([prog, "10"], env={"TRACKER_LEAK_SCAN": "0"})
    eq(env.stats(out)["tracker_memory"]["leak_scan_peak_bytes"], 0,
       "TRACKER_LEAK_SCAN=0: leak_scan_peak_bytes")


# leak_churn: 2,000,000 blocks at mostly distinct addresses, at most 20,000
# live at once, 10 at exit. The scan's table follows the entries still
# needed (live, or freed since the last watermark), not every address ever
# seen: it held all of them before (128 MiB here), and mapped its two 16 MiB
# chunk buffers whatever the chunks' size.
CHURN_SCAN_MAX = 24 << 20


def test_leak_scan_follows_live_blocks(env):
    """The leak scan's peak working memory is bounded by the blocks live
    (and recently freed), not by the addresses the program ever used; its
    result is unchanged: the 10 blocks left at exit, nothing else."""
    prog = env.prog("leak_churn")
    _, out, _ = env.run([prog, "100", "20000"])
    m = env.stats(out)["tracker_memory"]
    check(0 < m["leak_scan_peak_bytes"] <= CHURN_SCAN_MAX,
          "leak_scan_peak_bytes %d (bound %d)" % (m["leak_scan_peak_bytes"], CHURN_SCAN_MAX))
    cp = env.run_raw([env.tracker, "leaks", out])
    eq(cp.returncode, 0, "tracker leaks exit status")
    text = cp.stdout.decode()
    check("still reachable: 640 bytes in 10 blocks" in text, text)
    check("definitely lost: 0 bytes in 0 blocks" in text, text)


def test_preinit_log_counted(env):
    """A C++ program allocates before libtracker's constructor (libstdc++'s
    emergency pool): the log that keeps those calls is counted at its size,
    and given back once replayed; a C program that does not has none."""
    _, out, _ = env.run([env.prog("ctor_leak")])
    m = env.stats(out)["tracker_memory"]
    eq(m["preinit_peak_bytes"], PREINIT_LOG, "ctor_leak: preinit_peak_bytes")
    eq(m["preinit_bytes"], 0, "ctor_leak: preinit_bytes after the replay")
    check(m["peak_bytes"] >= PREINIT_LOG, "peak_bytes %d holds the log" % m["peak_bytes"])


def test_sample_memo_counted(env):
    """Sampling keeps a call-site memo per thread (static TLS) once it
    recorded an unsampled allocation; it goes with its thread: at the end
    only the main thread's is left, whatever the threads that came and
    went; none without --sample-bytes."""
    prog = env.prog("own_mem")
    sizes = set()
    for threads in (0, 3):
        _, out, _ = env.run([prog, "6", str(threads)], extra=["--sample-bytes", "1048576"])
        m = env.stats(out)["tracker_memory"]
        eq(m["sample_memos"], 1, "%d threads: sample_memos at the end" % threads)
        sizes.add(m["sample_memo_bytes"])
    eq(len(sizes), 1, "the main thread's memo, the same size: %r" % sorted(sizes))
    check(0 < sizes.pop() <= 1024, "a memo of a few hundred bytes")
    _, m, _ = own_run(env, 6, threads=3)
    eq((m["sample_memos"], m["sample_memo_bytes"]), (0, 0), "without sampling")
    _, m, _ = own_run(env, 6, threads=3)
    eq((m["sample_memos"], m["sample_memo_bytes"]), (0, 0), "without sampling")


def test_stats_text_unwinder_row(env):
    """The text report has a row for the unwinder and the leak scan."""
    _, _, out = own_run(env, 8)
    text = env.run_raw([env.tracker, "stats", out], timeout=120).stdout.decode()
    for row in ("Unwinder cache", "Leak scan"):
        check(re.search(r"^  %s\s" % re.escape(row), text, re.M), "row %r in:\n%s" % (row, text))


if __name__ == "__main__":
    sys.exit(main(globals()))
