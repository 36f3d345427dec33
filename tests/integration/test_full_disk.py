#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_full_disk.py - the capture's file system fills up mid-run: the
program is not disturbed (same exit status, runs to the end), the tracker
says once on stderr that it stopped and why, and what reached the disk reads
back as a truncated capture. Needs a small tmpfs, so it skips where this
process may not mount one."""

import os
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Skip, check, eq, ge, main  # noqa: E402


def test_disk_full(env):
    mnt = env.tmpdir("small")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", mnt],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if r.returncode != 0:
        raise Skip("cannot mount a tmpfs here")
    try:
        out = os.path.join(mnt, "full.bin")
        prog = env.prog("leaker")
        # leaker N SIZE: N blocks of SIZE bytes, then exit 0; far more events
        # than 64 KiB of capture can hold. Such regular records compress to
        # hundredths of a byte each (the heap time quantum, docs/FORMAT.md
        # §4.2, and HUF's reused code): 4,000,000 came to 265 KB, which a
        # 256 KiB disk held one day and not the next. 64 KiB fills about a
        # million events in, after several flushes' watermarks, so what
        # came before reads back.
        p = subprocess.run([env.tracker, "run", "-o", out, "--", prog, "4000000", "16"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        eq(p.returncode, 0, "program exit status passed through")
        stopped = [l for l in p.stderr.splitlines() if "stopped tracking" in l]
        eq(len(stopped), 1, "one 'stopped tracking' line (stderr: %r)" % p.stderr)
        check("No space left on device" in stopped[0], "names the cause: %r" % stopped[0])
        st = env.stats(out, allow_truncated=True)
        eq(st["truncated"], True, "truncated")
        ge(st["allocations"], 1, "events before the disk filled are readable")
    finally:
        subprocess.run(["umount", mnt], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def mount_small(env, label, size="256k"):
    mnt = env.tmpdir(label)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=" + size, "tmpfs", mnt],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if r.returncode != 0:
        raise Skip("cannot mount a tmpfs here")
    return mnt


def umount(mnt):
    subprocess.run(["umount", mnt], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def listed(stderr):
    """{path: description} of `tracker run`'s final list of captures."""
    out = {}
    for line in stderr.splitlines():
        if line.startswith("  ") and line.endswith(")") and " (" in line:
            path, _, desc = line.strip().partition(" (")
            out[path] = desc[:-1]
    return out


def ends_inside_chunk(path):
    """Whether the capture's last chunk is cut short (walking the framing)."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 16:
        return False
    p = struct.unpack_from("<I", data, 12)[0]
    while p + 32 <= len(data):
        p += 32 + struct.unpack_from("<I", data, p + 12)[0]
    return p != len(data)


def check_empty_capture(env, path):
    cp = env.run_raw([env.tracker, "stats", path], timeout=60)
    err = cp.stderr.decode(errors="replace").strip()
    eq(cp.returncode, 1, "stats on the empty %s (stderr %r)" % (path, err))
    eq(err, "tracker: %s: empty capture: nothing was written (disk full?)" % path,
       "stats on an empty capture")


def run_forker(env, mnt, pn, en=10):
    # forker LEAKER PN PS CN CS EN ES: two forked children and an exec'd one.
    prog, leaker = env.prog("forker"), env.prog("leaker")
    p = subprocess.run([env.tracker, "run", "-o", os.path.join(mnt, "app.bin"), "--", prog,
                        leaker, str(pn), "16", "10", "16", str(en), "16"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
    eq(p.returncode, 0, "forker's exit status passed through (stderr %r)" % p.stderr)
    return p.stderr


def test_disk_full_before_start(env):
    # Nothing fits, not even a header: every process leaves an empty file,
    # and the final list names each of them and why they are empty.
    mnt = mount_small(env, "full")
    try:
        try:
            with open(os.path.join(mnt, "filler"), "wb") as f:
                while True:
                    f.write(b"\0" * 65536)
                    f.flush()
        except OSError:
            pass
        err = run_forker(env, mnt, 10)
        files = sorted(os.path.join(mnt, n) for n in os.listdir(mnt) if n.endswith(".bin"))
        # The root and the exec'd child (a new image starts tracking anew).
        eq(len(files), 2, "captures on the full disk (%r)" % files)
        got = listed(err)
        eq(sorted(got), files, "captures in the final list (stderr %r)" % err)
        for path in files:
            eq(os.path.getsize(path), 0, "size of %s" % path)
            eq(got[path], "empty: nothing was written, the disk is full", "list entry of %s" % path)
            check_empty_capture(env, path)
        check("never loaded libtracker.so" not in err, "blames the program: %r" % err)
        root = os.path.join(mnt, "app.bin")
        check("'%s' is empty: the disk is full" % root in err, "root note: %r" % err)
    finally:
        umount(mnt)


def test_disk_full_children(env):
    # The exec'd child fills the disk while the parent waits for it; the
    # parent's own end is cut, and captures started later cannot write their
    # headers. Every capture file of the run is in the final list, the empty
    # ones say so, and a capture cut mid-write does not blame a kill. (The
    # parent's 300,000 blocks filled it before format 4's heap time quantum
    # made such regular records compress to 23 KB. With format 5's 1 ms
    # heap quantum the exec'd child's 4,000,000 came to 177 KB and the
    # root's to 47 KB, 228 KB in all, which a 256 KiB disk held; 128 KiB
    # leaves the child 81 KB.)
    mnt = mount_small(env, "mid", "128k")
    try:
        err = run_forker(env, mnt, 300000, 4000000)
        files = sorted(os.path.join(mnt, n) for n in os.listdir(mnt) if n.endswith(".bin"))
        got = listed(err)
        eq(sorted(got), files, "captures in the final list (stderr %r)" % err)
        # How much the parent leaves free depends on its last chunk (since
        # format 4's smaller chunks, often a few KiB: room for the children's
        # small captures). Empty or not, each is listed and reads back.
        ge(len(files), 5, "the root, two forked children, the exec'd child's two: %r" % files)
        empty = [p for p in files if os.path.getsize(p) == 0]
        for path in files:
            if path not in empty:
                env.stats(path, allow_truncated=True)
        for path in empty:
            eq(got[path], "empty: nothing was written, the disk is full", "list entry of %s" % path)
            check_empty_capture(env, path)
        root = os.path.join(mnt, "app.bin")
        st = env.stats(root, allow_truncated=True)
        eq(st["truncated"], True, "root capture truncated")
        cp = env.run_raw([env.tracker, "stats", root], timeout=60)
        text = cp.stdout.decode(errors="replace")
        if ends_inside_chunk(root):
            eq(st["ends_inside_chunk"], True, "ends_inside_chunk")
            check("truncated inside a chunk (a write was cut short: the disk was full" in text
                  and "killed" not in text, "stats on the root:\n" + text)
    finally:
        umount(mnt)


if __name__ == "__main__":
    sys.exit(main(globals()))
