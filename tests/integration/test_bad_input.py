#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_bad_input.py - `tracker stats` on inputs that are not (whole)
captures, and `tracker run` usage errors. Bad input gets a one-line error and
a non-zero status, a capture cut after its header reads as truncated, and
nothing ever dies by a signal. `tracker run` refuses bad output paths before
starting the program and never follows a symlink it was given as output."""

import os
import random
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import check, eq, ge, le, main  # noqa: E402


def expect_error(env, argv, want_rc=None, what=""):
    cp = env.run_raw(argv, timeout=60)
    rc = cp.returncode
    err = cp.stderr.decode(errors="replace")
    check(rc >= 0, "%s: killed by signal %d: %s" % (what, -rc, " ".join(argv)))
    if want_rc is None:
        check(0 < rc < 126, "%s: exit status %d, expected an error status" % (what, rc))
    else:
        eq(rc, want_rc, "%s: exit status" % what)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    eq(len(lines), 1, "%s: lines on stderr (%r)" % (what, err))
    return cp


def stats_argv(env, path):
    return [env.tracker, "stats", "--json", path]


def test_stats_missing_file(env):
    expect_error(env, stats_argv(env, os.path.join(env.tmp, "nope.bin")), what="missing file")


def test_stats_directory(env):
    expect_error(env, stats_argv(env, env.tmpdir("d")), what="directory")


def test_stats_empty_file(env):
    p = os.path.join(env.tmp, "empty.bin")
    open(p, "wb").close()
    expect_error(env, stats_argv(env, p), what="empty file")


def test_stats_random_bytes(env):
    rnd = random.Random(12345)
    for i, n in enumerate((7, 64, 4096, 100000)):
        p = os.path.join(env.tmp, "random%d.bin" % i)
        with open(p, "wb") as f:
            f.write(bytes(rnd.getrandbits(8) for _ in range(n)))
        expect_error(env, stats_argv(env, p), what="%d random bytes" % n)
    # Random bytes behind a valid magic: the header CRC must catch them.
    p = os.path.join(env.tmp, "magic.bin")
    with open(p, "wb") as f:
        f.write(b"\x89TRK\r\n\x1a\n" + bytes(rnd.getrandbits(8) for _ in range(5000)))
    expect_error(env, stats_argv(env, p), what="magic then random bytes")


def make_capture(env):
    _, out, _ = env.run([env.prog("leaker"), "3000", "40", "1000"])
    with open(out, "rb") as f:
        data = f.read()
    full = env.stats(out)
    return data, full


def test_stats_truncated_captures(env):
    data, full = make_capture(env)
    eq(data[:8], b"\x89TRK\r\n\x1a\n", "capture magic")
    header_len = struct.unpack_from("<I", data, 12)[0]
    check(64 < header_len < len(data), "header_len %d of %d bytes" % (header_len, len(data)))
    cuts = sorted({1, 8, 12, 63, 64, header_len - 1, header_len, header_len + 1,
                   header_len + 31, header_len + 32, header_len + 33,
                   len(data) // 3, len(data) // 2, len(data) - 33, len(data) - 1})
    for cut in cuts:
        p = os.path.join(env.tmp, "cut%d.bin" % cut)
        with open(p, "wb") as f:
            f.write(data[:cut])
        argv = stats_argv(env, p)
        if cut < header_len:
            expect_error(env, argv, what="cut at %d, inside the %d-byte header" % (cut, header_len))
            continue
        # After the header: a readable, truncated capture that holds a prefix
        # of the full one.
        st = env.stats(p, allow_truncated=True)
        eq(st["truncated"], True, "cut at %d: truncated" % cut)
        le(st["allocations"], full["allocations"], "cut at %d: allocations" % cut)
        le(st["frees"], full["frees"], "cut at %d: frees" % cut)


def test_stats_corrupted_chunk(env):
    data, full = make_capture(env)
    header_len = struct.unpack_from("<I", data, 12)[0]
    rnd = random.Random(7)
    # Flip single bytes all over the chunk area: every damaged chunk fails its
    # CRC and is skipped; the tool must keep going, never crash.
    for i in range(12):
        pos = rnd.randrange(header_len, len(data))
        bad = bytearray(data)
        bad[pos] ^= 0x5A
        p = os.path.join(env.tmp, "flip%d.bin" % pos)
        with open(p, "wb") as f:
            f.write(bad)
        cp = env.run_raw(stats_argv(env, p), timeout=60)
        check(cp.returncode >= 0, "flip at %d: killed by signal %d" % (pos, -cp.returncode))
        check(cp.returncode < 126, "flip at %d: exit status %d" % (pos, cp.returncode))


def test_run_missing_program(env):
    out = env.out_path()
    cp = expect_error(env, [env.tracker, "run", "-o", out, "--", "/nonexistent/prog"], 127,
                      "missing program")
    check(b"/nonexistent/prog" in cp.stderr, "the message names the program")


def test_run_unknown_option(env):
    marker = os.path.join(env.tmp, "ran")
    expect_error(env, [env.tracker, "run", "--no-such-option", "-o", env.out_path(), "--",
                       "/usr/bin/touch", marker], 2, "unknown option")
    check(not os.path.exists(marker), "the program ran despite a usage error")


def test_run_unwritable_output(env):
    marker = os.path.join(env.tmp, "ran")
    expect_error(env, [env.tracker, "run", "-o", "/nonexistent-dir/sub/out.bin", "-f", "--",
                       "/usr/bin/touch", marker], 2, "unwritable output")
    check(not os.path.exists(marker), "the program ran although its output cannot be written")


def test_run_existing_output_without_force(env):
    d = env.tmpdir("exist")
    out = os.path.join(d, "out.bin")
    with open(out, "wb") as f:
        f.write(b"precious")
    st0 = os.stat(out)
    marker = os.path.join(d, "ran")
    expect_error(env, [env.tracker, "run", "-o", out, "--", "/usr/bin/touch", marker], 2,
                 "existing output without -f")
    with open(out, "rb") as f:
        eq(f.read(), b"precious", "existing output content")
    eq(os.stat(out).st_mtime_ns, st0.st_mtime_ns, "existing output mtime")
    check(not os.path.exists(marker), "the program ran although the output exists")


def test_run_output_symlink(env):
    d = env.tmpdir("link")
    target = os.path.join(d, "target")
    with open(target, "wb") as f:
        f.write(b"precious")
    link = os.path.join(d, "out.bin")
    os.symlink(target, link)
    leaker = env.prog("leaker")
    for force in ([], ["-f"]):
        cp = env.run_raw([env.tracker, "run", "-o", link] + force + ["--", leaker, "10", "8"],
                         timeout=60)
        check(cp.returncode >= 0, "killed by signal %d" % -cp.returncode)
        with open(target, "rb") as f:
            eq(f.read(), b"precious", "symlink target after run %s" % force)
        if cp.returncode == 0:
            # Accepted with -f only, and then written as a new file in the
            # link's place, not through it.
            eq(force, ["-f"], "a symlink output accepted without -f")
            check(not os.path.islink(link), "the capture went through the symlink")
            ge(env.stats(link)["allocations"], 10, "capture written in place of the link")
        else:
            eq(cp.returncode, 2, "exit status refusing a symlink output %s" % force)
    # A dangling link must not create its target either.
    dangling = os.path.join(d, "dangling.bin")
    ghost = os.path.join(d, "ghost")
    os.symlink(ghost, dangling)
    cp = env.run_raw([env.tracker, "run", "-o", dangling, "--", leaker, "10", "8"], timeout=60)
    check(cp.returncode >= 0, "killed by signal %d" % -cp.returncode)
    check(not os.path.exists(ghost), "a dangling output symlink was followed")


if __name__ == "__main__":
    sys.exit(main(globals()))
